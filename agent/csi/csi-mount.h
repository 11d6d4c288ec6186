/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The mounts layoutd-csi makes: a bind of a workspace's FUSE mount onto
 * the CO's target_path, and its removal. What is mounted where is read
 * from /proc/self/mountinfo (libmount) only: nothing here stats, opens or
 * resolves a path inside a FUSE mount, so a hung or dead workspace daemon
 * cannot hang the plugin. Library-style: 0 / -errno, never logs.
 */

#include <stdbool.h>
#include <sys/types.h>

#include "macro.h"

typedef struct CsiMount {
    dev_t devno;        /* major:minor: a FUSE connection, for a workspace */
    int id;             /* mount id */
    bool read_only;     /* the mount's own (VFS) flag */
    char *fstype;
} CsiMount;

void csi_mount_done(CsiMount *m);

/* The topmost mount at exactly path (trailing slashes ignored, nothing
 * resolved). Returns: -ENOENT when path is not a mount point, -errno, 0. */
int csi_mount_at(const char *path, CsiMount *ret);

/* The mount points, other than `except`, of devno that lie below one of
 * roots (a NULL-terminated list). Returns: <0, or 0 with *ret (a strv,
 * maybe empty). */
int csi_mount_list(dev_t devno, char *const *roots, const char *except, char ***ret);

/*
 * Whether target, which is not a mount point, can take a bind: missing
 * (it will be made), or an empty directory that is not a symlink. A
 * mount would hide files that are there, and the directory could not be
 * removed after it. Returns: -ENOTEMPTY, -ENOTDIR (not a directory, or a
 * symlink), -errno, 0.
 */
int csi_mount_check_empty(const char *target);

/*
 * Binds source (a mount point) onto target (created 0750 when missing;
 * its parent must exist), then applies flags (MS_RDONLY, MS_NOSUID,
 * MS_NODEV, MS_NOEXEC, MS_NOATIME) with a bind remount, and checks in
 * mountinfo that target is a mount of source's devno with those flags.
 * Anything half done is undone (the bind unmounted, a target it made
 * removed). Returns: -EBUSY when something is mounted at target already,
 * -ENOTEMPTY / -ENOTDIR as csi_mount_check_empty(), -errno, 0.
 */
int csi_mount_bind(const char *source, dev_t devno, const char *target, unsigned long flags);

/* Unmounts everything stacked at target (never lazily); on EBUSY retries
 * for about two seconds. Returns: -EBUSY, -errno, 0 (also when nothing
 * was mounted). */
int csi_mount_unmount(const char *target);

/*
 * Whether target is a path the plugin may mount on: absolute, in canonical
 * form (no "//", ".", ".." or trailing "/"), and below one of roots once
 * symlinks in its parent are resolved (the parent must exist). Returns:
 * -EINVAL (not canonical), -EPERM (outside the roots), -ENOENT (no
 * parent), 0.
 */
int csi_mount_check_target(const char *target, char *const *roots);
