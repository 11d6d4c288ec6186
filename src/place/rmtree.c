/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Deleting a workspace's tree. Everything is done relative to directory
 * fds opened with O_NOFOLLOW, so a symlink planted in the tree (by the
 * workspace's own daemon or an agent inside it) is removed as a link and
 * never followed out of the tree, and a rename race cannot redirect us:
 * we only descend through fds we opened and verified.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "place-internal.h"

static int rmtree_children(int fd, dev_t dev, unsigned depth);

static int remove_entry(int dirfd, const char *name, dev_t dev, unsigned depth) {
    struct stat st;

    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : -errno;
    if (!S_ISDIR(st.st_mode)) {
        if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
            return -errno;
        return 0;
    }
    /* A different st_dev is another filesystem mounted inside the tree
     * (a bind mount, a FUSE mount left behind): never delete into it. */
    if (st.st_dev != dev)
        return -EXDEV;
    if (depth >= PLACE_RMTREE_DEPTH_MAX)
        return -ELOOP;

    _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    struct stat st2;
    if (fstat(fd, &st2) < 0)
        return -errno;
    /* Swapped between fstatat and openat? Then it is not what we checked. */
    if (st2.st_dev != st.st_dev || st2.st_ino != st.st_ino)
        return -EBUSY;

    int r = rmtree_children(TAKE_FD(fd), dev, depth + 1);
    if (r < 0)
        return r;
    if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
        return -errno;
    return 0;
}

/* Takes ownership of fd. */
static int rmtree_children(int fd, dev_t dev, unsigned depth) {
    struct stat st;
    /* Read-only directories are common in workspaces (the Go module cache
     * makes them 0555): give the owner write and search access first, or
     * an unprivileged caller could not empty them. */
    if (fstat(fd, &st) >= 0 && (st.st_mode & 0700) != 0700)
        (void) fchmod(fd, (st.st_mode & 07777) | 0700);
    DIR *d = fdopendir(fd);
    if (!d) {
        int r = -errno;
        safe_close(fd);
        return r;
    }
    int r = 0;
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            if (errno != 0)
                r = -errno;
            break;
        }
        if (streq(de->d_name, ".") || streq(de->d_name, ".."))
            continue;
        r = remove_entry(dirfd(d), de->d_name, dev, depth);
        if (r < 0)
            break;
    }
    closedir(d);
    return r;
}

int place_rmtree_at(int dirfd, const char *name) {
    struct stat st;

    if (dirfd < 0 || isempty(name) || strchr(name, '/') || streq(name, ".") || streq(name, ".."))
        return -EINVAL;
    if (fstat(dirfd, &st) < 0)
        return -errno;
    return remove_entry(dirfd, name, st.st_dev, 0);
}
