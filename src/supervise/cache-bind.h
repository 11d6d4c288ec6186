/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A workspace's cache mount: a native directory of its state volume
 * (<volume>/derived/<id>) bound inside the workspace's FUSE mount, so that
 * derived data (node_modules' store, target/, tool caches) never goes
 * through the daemon (docs/layout.md, "The cache").
 *
 * The bind is made by a short-lived child process: reaching the mount
 * point means a LOOKUP through the FUSE mount, which a hung daemon never
 * answers, and the agent's loop must never wait on one. The child mounts by
 * file descriptor (open_tree + move_mount), resolving the name beneath the
 * mount's root with no symlink followed: the mount point lies in a tree
 * that the workspace's users write, and a planted symlink must never
 * redirect a root mount.
 */

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

typedef struct CacheBindSpec {
    const char *source;     /* absolute; made (with its parent) if missing */
    const char *owner_dir;  /* the workspace's state dir: a new source gets
                               its owner and mode, and the source always
                               gets its XFS project id (inherited), so the
                               cache counts against the workspace's quota */
    const char *mountpoint; /* the workspace's FUSE mount */
    const char *name;       /* one path component inside it */
    dev_t mount_dev;        /* the FUSE mount's device: the child refuses
                               to bind onto anything else */
} CacheBindSpec;

/* The outcomes the child reports. */
typedef enum CacheBindOutcome {
    CACHE_BIND_BOUND = 0,   /* bound now */
    CACHE_BIND_ALREADY = 1, /* the source was bound there already */
    CACHE_BIND_FAILED = 2,  /* nothing mounted; the message says why */
} CacheBindOutcome;

/*
 * Starts the child. *ret_pidfd becomes readable when it exits; then
 * cache_bind_finish() reaps it. *ret_msgfd is where it writes why it
 * failed. What the child needs is made before the fork (it reads spec's
 * strings from its copy of the memory) and it calls nothing but system
 * calls; it keeps none of the caller's file descriptors and dies with the
 * caller. It refuses a mount point that holds files (they would be hidden)
 * or is not a directory.
 * Returns: 0, or -errno (nothing started).
 */
int cache_bind_start(const CacheBindSpec *spec, pid_t *ret_pid, int *ret_pidfd, int *ret_msgfd);

/*
 * Reaps the child (its pidfd) and reads its message. Returns the
 * CacheBindOutcome (>= 0), with the reason in msg when FAILED, or -errno
 * when the child could not be reaped or died of a signal (msg says which).
 */
int cache_bind_finish(int pidfd, int msgfd, char *msg, size_t msg_len);

/* Whether name is one that a cache may be mounted on: a single component,
 * not "." or "..", without '/'. */
bool cache_bind_name_is_valid(const char *name);

/* Which of the n paths are mount points now, by /proc/self/mountinfo
 * (found[i]): strings compared, nothing resolved, so a hung FUSE mount
 * cannot hold the caller. Returns 0, or -errno. */
int cache_bind_mounted(char *const *paths, size_t n, bool *found);
