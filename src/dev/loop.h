/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Loop devices: attach a backing file (LOOP_CTL_GET_FREE + LOOP_CONFIGURE),
 * find the device of a backing file, read its status back from the kernel,
 * grow it, detach it. Modelled on util-linux lib/loopdev.c and systemd
 * src/shared/loop-util.c: every property we report is read back from the
 * kernel (LOOP_GET_STATUS64 and /sys/block/loopN/), never assumed from what
 * we asked for. Library code: returns 0 / -errno, never logs.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "macro.h"

typedef struct LoopInfo {
    char *node;              /* "/dev/loop3" */
    int nr;                  /* 3 */
    dev_t devno;             /* makedev(7, 3) */
    char *backing_file;      /* from sysfs loop/backing_file or LOOP_GET_STATUS64 */
    bool direct_io;          /* READ BACK from the kernel: sysfs loop/dio or LO_FLAGS_DIRECT_IO */
    bool autoclear;
    bool read_only;
    unsigned logical_block_size; /* queue/logical_block_size */
    uint64_t size;           /* bytes, sysfs size * 512 */
} LoopInfo;

/* Frees the members of *i and zeroes it; accepts a zeroed struct. */
void loop_info_done(LoopInfo *i);

typedef struct LoopAttachOptions {
    bool direct_io;          /* ask for LO_FLAGS_DIRECT_IO */
    unsigned block_size;     /* 0 = choose: the backing fs's logical block size (st_blksize / BLKSSZGET of the backing bdev), at least 512; 4096 when direct_io on a 4K fs */
    bool autoclear;          /* see docs; the volumes engine passes false (documented choice) */
} LoopAttachOptions;

/*
 * Attaches path with LOOP_CTL_GET_FREE + LOOP_CONFIGURE, holding a BSD
 * lock (flock LOCK_EX) on the loop device during setup so udev does not
 * probe it half-made; retries EBUSY/EAGAIN races a bounded number of times
 * (64) with random 10-250 ms jitter; reads the status back.
 * If direct I/O was asked and the kernel refused it (LOOP_CONFIGURE EINVAL
 * with DIO, or the flag not set after), it falls back to buffered and sets
 * *ret_dio_fallback = true (the caller reports it; never silent).
 * ret_dio_fallback may be NULL (then a refused DIO is still a fallback, but
 * the caller can only see it in ret->direct_io).
 * Returns: -ENXIO/-EBUSY when no loop device could be had after the
 * retries, -errno otherwise; 0 with *ret filled.
 */
int loop_device_attach(const char *path, const LoopAttachOptions *opts, LoopInfo *ret, bool *ret_dio_fallback);

/*
 * Finds the loop device whose backing file is path (same inode: st_dev /
 * st_ino compared with LOOP_GET_STATUS64 lo_device / lo_inode, so renamed
 * or "(deleted)" paths in sysfs do not matter).
 * Returns: -ENOENT when none, -errno (stat of path failed), 0 with *ret.
 */
int loop_device_find_by_backing_file(const char *path, LoopInfo *ret);

/*
 * Reads the status of a loop device node ("/dev/loopN").
 * Returns: -ENXIO if the device has no backing file, -errno, 0 with *ret.
 */
int loop_device_get_info(const char *node, LoopInfo *ret);

/*
 * Detaches (LOOP_CLR_FD), retrying EBUSY a bounded number of times with
 * jitter (a transient opener such as a udev probe).
 * Returns: -EBUSY if still open/mounted after the retries, -ENXIO if
 * not attached, -errno, 0 on success.
 */
int loop_device_detach(const char *node);

/*
 * LOOP_SET_CAPACITY after the backing file grew; sets *ret_size (may be
 * NULL) to the new size in bytes, read back from sysfs.
 * Returns: <0 on error, 0 on success.
 */
int loop_device_refresh_size(const char *node, uint64_t *ret_size);

/* Additions beyond dev-api.md: */

/*
 * The logical block size attach would choose for a backing file when
 * opts->block_size is 0: the logical sector size of the block device that
 * holds the file (BLKSSZGET via /sys/dev/block/M:m/queue), raised to the
 * filesystem block size when direct_io and the fs block is 4096, never
 * below 512. Returns: <0 on error, 0 with *ret.
 */
int loop_choose_block_size(const char *path, bool direct_io, unsigned *ret);

/*
 * Lists the loop devices whose backing file lies below dir (by path prefix
 * as the kernel reports it; used by tests and teardown).
 * Returns: <0 on error, 0 with *ret a NULL-terminated strv of nodes.
 */
int loop_device_list_below(const char *dir, char ***ret);
