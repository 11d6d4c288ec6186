/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A vdo-xfs volume's block layer: backing file (or block device) -> loop
 * device (direct I/O as the pool asks) -> vdoformat (only a blank volume
 * this agent created) -> dm-vdo target /dev/mapper/layoutd-<volume>.
 * The filesystem (mkfs.xfs -K, mount without `discard`) goes on top of
 * the returned node; see vdo-apply.c for the whole chain.
 * Library code: 0 / -errno, never logs; *ret_error (may be NULL) gets a
 * sentence for the operator when something fails.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "layout.h"
#include "vdo-status.h"

typedef struct VdoVolumeInfo {
    char *dm_name;            /* "layoutd-content-0" */
    char *dm_node;            /* "/dev/mapper/layoutd-content-0" */
    dev_t devno;              /* of the dm device */
    char *storage_node;       /* "/dev/loop3", or the pool's block device */
    bool direct_io;           /* loop: read back from the kernel */
    bool dio_fallback;        /* loop: direct I/O asked for but refused */
    bool created_file;        /* this call created the backing file */
    bool attached;            /* this call attached the loop device */
    bool formatted;           /* this call ran vdoformat */
    bool created;             /* this call created the dm target (false: was up) */
    uint64_t logical_size;    /* bytes */
    uint64_t storage_size;    /* bytes of the storage device */
} VdoVolumeInfo;

/* Frees the members and zeroes *i; accepts a zeroed struct. */
void vdo_volume_info_done(VdoVolumeInfo *i);

typedef struct VdoVolumeUpOptions {
    bool may_format;          /* the caller's record says this agent created
                                 the backing storage: a blank one may be
                                 formatted. A file this call creates may be
                                 formatted anyway. */
} VdoVolumeUpOptions;

/* "layoutd-<volume>". Returns: -EINVAL, -ENOMEM, 0. */
int vdo_volume_dm_name(const char *volume_name, char **ret);

/*
 * Brings the volume's block layer up, idempotently: a dm device that is
 * already there is adopted (created = false). backing_path is the sparse
 * backing file (created at pool->volume_size when missing) unless the pool
 * names a block device (pool->vdo.device), which is used as is.
 * Whatever this call made is undone when it fails (dm target, loop device,
 * a file it created).
 * Returns: -EOPNOTSUPP (no dm-vdo in the kernel: *ret_error says "kernel
 * has no dm-vdo target; load dm-vdo (modprobe dm-vdo)"), -ENOENT (vdoformat
 * missing), -EEXIST (the storage holds a foreign signature, or is blank but
 * not ours), -errno, 0 with *ret.
 */
int vdo_volume_up(const Pool *pool, const char *volume_name, const char *backing_path,
                  const VdoVolumeUpOptions *opts, VdoVolumeInfo *ret, char **ret_error);

/* vdoformat of the storage (which the caller checked: blank, ours), for
 * the pool's logical size. Returns: -ENOENT (no vdoformat), -errno, 0. */
int vdo_volume_format_storage(const Pool *pool, const char *storage_node, char **ret_error);

/*
 * The dm-vdo target /dev/mapper/layoutd-<volume> on storage_node (which
 * holds a VDO super block), or the one that is up already (then
 * ret->created is false). ret->dm_node, devno, storage_size are set.
 * Returns: -EOPNOTSUPP (no dm-vdo in the kernel), -EIO (the kernel refused
 * the table), -errno, 0 with *ret.
 */
int vdo_volume_create(const Pool *pool, const char *volume_name, const char *storage_node, VdoVolumeInfo *ret,
                      char **ret_error);

/* The dm node of the volume's target and its devno when it exists (a stat,
 * no device-mapper call). Returns: -ENOENT, -ENOTBLK, -errno, 0. */
int vdo_volume_dm_node(const char *volume_name, char **ret_node, dev_t *ret_devno);

/*
 * Takes the block layer down: removes the dm target (the filesystem must be
 * unmounted first), then detaches the loop device of backing_path (when it
 * is a file). Data stays. Missing pieces are fine (idempotent).
 * Returns: -EBUSY (still mounted/open), -errno, 0.
 */
int vdo_volume_down(const char *volume_name, const char *backing_path, char **ret_error);

/* Status line + stats of a running volume.
 * Returns: -ENXIO (not up), -EOPNOTSUPP, -errno, 0 with *ret. */
int vdo_volume_stats(const char *volume_name, VdoStats *ret, char **ret_error);

/*
 * Grows a running volume: the logical size to new_logical_size (never
 * shrinks; 0 = keep), and the physical size to what the storage device now
 * holds, when it grew by at least one allowed step (the kernel's minimum,
 * 32832 blocks; the loop device must have been refreshed first:
 * loop_device_refresh_size). *ret_changed (may be NULL).
 * Returns: -ENXIO (not up), -errno, 0.
 */
int vdo_volume_grow(const Pool *pool, const char *volume_name, const char *backing_path, uint64_t new_logical_size,
                    bool *ret_changed, char **ret_error);

/* The periodic trim of a mounted vdo-xfs volume: "fstrim --verbose
 * <mountpoint>". Online discard (-o discard) stalls I/O on VDO, so the
 * agent runs this every pool->vdo.fstrim_interval instead.
 * Returns: -EINVAL, -ENOMEM, 0 with *ret (strv). */
int vdo_fstrim_argv(const char *mountpoint, char ***ret);

/* Checks a vdo-xfs pool's mount options: `discard` is refused (see
 * vdo_fstrim_argv). Returns: -EINVAL (with *ret_reason, static), 0. */
int vdo_mount_options_check(const char *options, const char **ret_reason);
