/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * FUSE mounts as the supervisor sees them: found in /proc/self/mountinfo,
 * read by libmount (never by stat(): a dead FUSE mount answers ENOTCONN and
 * a hung one never answers), their connections in fusectl (/sys/fs/fuse/connections/<dev>/),
 * and the clean-up of a mount whose daemon is gone: abort the connection,
 * detach the mount, check that a plain directory is left.
 * Library code: 0 / -errno, never logs.
 */

#include <stdbool.h>
#include <sys/types.h>

#define FUSECTL_DIR "/sys/fs/fuse/connections"

typedef struct FuseMount {
    char *target;   /* mount point, unescaped */
    char *fstype;   /* "fuse", "fuse.<subtype>", "fuseblk" */
    dev_t devno;    /* st_dev of the mount: the fusectl connection name */
    int id;         /* mount id */
} FuseMount;

/* Frees an array of n mounts. Accepts NULL. */
void fuse_cleanup_mounts_free(FuseMount *m, size_t n);

/* Reads every FUSE mount ("fuse", "fuse.<subtype>", "fuseblk") from
 * mountinfo_path (NULL: /proc/self/mountinfo) with libmount, in table
 * order (so a later entry at the same target is stacked above an earlier
 * one); a line that does not parse is skipped. Returns: <0 on error, 0
 * with *ret and *ret_n (may be 0/NULL). */
int fuse_cleanup_read_mounts(const char *mountinfo_path, FuseMount **ret, size_t *ret_n);

/* The topmost FUSE mount at target in m[0..n), or NULL. */
const FuseMount *fuse_cleanup_find(const FuseMount *m, size_t n, const char *target);

/* Mounts fusectl on FUSECTL_DIR unless it is mounted already (another
 * caller may race us: EBUSY is success if it is mounted afterwards).
 * Returns: <0 on error, 0 if it was there, 1 if we mounted it. */
int fuse_cleanup_ensure_fusectl(void);

/* Aborts the connection of the FUSE mount with device devno: every pending
 * and future request fails with ENOTCONN, a hung daemon can no longer
 * block its callers. Returns: -ENOENT (no such connection), -errno, 0. */
int fuse_cleanup_abort(dev_t devno);

/* Reads the number of requests waiting on the connection (fusectl
 * "waiting"). Returns: -ENOENT, -errno, 0 with *ret. */
int fuse_cleanup_waiting(dev_t devno, unsigned *ret);

/*
 * Removes every FUSE mount stacked at target: abort the connection (so
 * that nothing waits on a dead or hung daemon), umount2(MNT_DETACH), and
 * verify that target is a plain directory again (stat works, no FUSE
 * mount left in mountinfo). Only FUSE mounts are touched.
 * Returns: <0 on error, 0 if there was nothing to do, >0 = number of
 * mounts removed.
 */
int fuse_cleanup_mountpoint(const char *target);
