/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Mounts of volumes, with libmount: find (from /proc/self/mountinfo), mount
 * (mnt_context, verified in mountinfo afterwards), unmount (umount2, never
 * lazy unless asked, with a list of the processes that keep it busy).
 * Library code: 0 / -errno, never logs.
 */

#include <stdbool.h>
#include <sys/types.h>

typedef struct MountInfo {
    char *target;
    char *source;
    char *fstype;
    char *options;           /* VFS + fs options, comma-separated */
    dev_t devno;             /* the device behind it: major:minor from
                                mountinfo, or the source's when that is
                                anonymous (major 0: btrfs) */
    int id;                  /* mount id */
} MountInfo;

/* Frees the members and zeroes *m; accepts a zeroed struct. */
void mount_info_done(MountInfo *m);

/* Finds the mount at target (exact path; the topmost if stacked) in
 * /proc/self/mountinfo. Returns: -ENOENT if none, -errno, 0 with *ret. */
int mount_find_by_target(const char *target, MountInfo *ret);

/* Finds the (first) mount of a source device (devno, as MountInfo.devno).
 * Returns: -ENOENT if none, -errno, 0 with *ret. */
int mount_find_by_devno(dev_t devno, MountInfo *ret);

/*
 * Mounts source on target with fstype and options (may be NULL) via
 * libmount (mnt_context_*), creating the target dir (0755) if missing, then
 * verifies in mountinfo that target is a mount of source's device.
 * Returns: -EBUSY (something is already mounted at target), -errno from
 * mount(2) or the helper, -EIO if the mount is not visible after, 0.
 */
int mount_volume(const char *source, const char *target, const char *fstype, const char *options);

/*
 * Unmounts target; if busy, retries a bounded number of times (with
 * jitter), then returns -EBUSY and, if ret_holders != NULL, a strv of
 * "pid comm" of processes holding files below target (scan /proc/<pid>/fd,
 * cwd, root). Never lazy unless lazy=true (MNT_DETACH).
 * Returns: -ENOENT if target is not a mount point, -EBUSY, -errno, 0.
 */
int mount_unmount(const char *target, bool lazy, char ***ret_holders);

/* Addition: the holders scan alone. Returns: <0 on error, 0 with *ret
 * (a strv, possibly empty). */
int mount_list_holders(const char *target, char ***ret);

/* Whether the comma-separated option list `options` (a mountinfo or fstab
 * field; NULL is empty) holds `opt` as a whole item ("nodev" is not in
 * "nodevice"). */
bool mount_options_has(const char *options, const char *opt);
