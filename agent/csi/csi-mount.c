/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Bind mounts onto target paths, and what mountinfo says (csi-mount.h). */

#include <dirent.h>
#include <fcntl.h>
#include <libmount.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>

#include "csi-mount.h"
#include "util.h"

#define CSI_UMOUNT_TRIES 12u

void csi_mount_done(CsiMount *m) {
    if (!m)
        return;
    free(m->fstype);
    *m = (CsiMount) {};
}

static void tablep(struct libmnt_table **t) {
    if (*t)
        mnt_unref_table(*t);
}
static void iterp(struct libmnt_iter **i) {
    if (*i)
        mnt_free_iter(*i);
}

static int load(struct libmnt_table **ret) {
    errno = 0;
    struct libmnt_table *t = mnt_new_table_from_file("/proc/self/mountinfo");
    if (!t)
        return errno > 0 ? -errno : -EIO;
    *ret = t;
    return 0;
}

/* The table, and an iterator over it from its last line. */
static int load_backward(struct libmnt_table **ret_t, struct libmnt_iter **ret_it) {
    int r = load(ret_t);
    if (r < 0)
        return r;
    *ret_it = mnt_new_iter(MNT_ITER_BACKWARD);
    return *ret_it ? 0 : -ENOMEM;
}

/* path without its trailing slashes ("/" stays "/"). */
static size_t trimmed_len(const char *path) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    return n;
}

static bool same_path(const char *a, const char *b) {
    size_t n = trimmed_len(b);
    return strlen(a) == n && strncmp(a, b, n) == 0;
}

static bool below(const char *p, const char *root) {
    size_t n = trimmed_len(root);
    if (n == 1 && root[0] == '/')
        return p[0] == '/' && p[1] != 0;
    return strncmp(p, root, n) == 0 && p[n] == '/' && p[n + 1] != 0;
}

int csi_mount_at(const char *path, CsiMount *ret) {
    if (isempty(path) || path[0] != '/' || !ret)
        return -EINVAL;
    _cleanup_(tablep) struct libmnt_table *t = NULL;
    _cleanup_(iterp) struct libmnt_iter *it = NULL;
    /* Backwards: of stacked mounts the last one is what the path shows. */
    int r = load_backward(&t, &it);
    if (r < 0)
        return r;
    struct libmnt_fs *fs;
    while (mnt_table_next_fs(t, it, &fs) == 0) {
        const char *target = mnt_fs_get_target(fs);
        if (!target || !same_path(target, path))
            continue;
        const char *vfs = mnt_fs_get_vfs_options(fs);
        CsiMount m = {
            .devno = mnt_fs_get_devno(fs),
            .id = mnt_fs_get_id(fs),
            .read_only = vfs && mnt_optstr_get_option(vfs, "ro", NULL, NULL) == 0,
            .fstype = strdup(mnt_fs_get_fstype(fs) ?: ""),
        };
        if (!m.fstype)
            return -ENOMEM;
        *ret = m;
        return 0;
    }
    return -ENOENT;
}

int csi_mount_list(dev_t devno, char *const *roots, const char *except, char ***ret) {
    _cleanup_(tablep) struct libmnt_table *t = NULL;
    int r = load(&t);
    if (r < 0)
        return r;
    _cleanup_(iterp) struct libmnt_iter *it = mnt_new_iter(MNT_ITER_FORWARD);
    if (!it)
        return -ENOMEM;
    char **list = calloc(1, sizeof(char *));
    if (!list)
        return -ENOMEM;
    struct libmnt_fs *fs;
    while (mnt_table_next_fs(t, it, &fs) == 0) {
        const char *target = mnt_fs_get_target(fs);
        if (!target || mnt_fs_get_devno(fs) != devno || (except && same_path(target, except)))
            continue;
        bool inside = false;
        for (char *const *root = roots; root && *root && !inside; root++)
            inside = below(target, *root);
        if (inside && !strv_contains((const char *const *) list, target) && strv_extend(&list, target) < 0) {
            strv_free(list);
            return -ENOMEM;
        }
    }
    *ret = list;
    return 0;
}

static void jitter_sleep(void) {
    /* 100-200 ms: long enough for a short-lived opener to go away. */
    usec_t us = 100 * USEC_PER_MSEC + random_u64() % (100 * USEC_PER_MSEC);
    struct timespec ts = { .tv_sec = 0, .tv_nsec = (long) (us * 1000) };
    nanosleep(&ts, NULL);
}

/* Unmounts what is mounted below target (the cache inside a workspace's
 * bind), deepest first: the mount at target is busy while they are there.
 * They are slave copies, so the host's own mounts stay. Returns how many,
 * or -errno. */
static int unmount_below(const char *target) {
    _cleanup_(tablep) struct libmnt_table *t = NULL;
    _cleanup_(iterp) struct libmnt_iter *it = NULL;
    _cleanup_strv_free_ char **list = NULL;
    int r = load_backward(&t, &it);
    if (r < 0)
        return r;
    struct libmnt_fs *fs;
    while (mnt_table_next_fs(t, it, &fs) == 0) {
        const char *p = mnt_fs_get_target(fs);
        if (p && below(p, target) && (r = strv_extend(&list, p)) < 0)
            return r;
    }
    /* Mountinfo lists a mount after its parent: backwards is children
     * first. */
    int n = 0;
    for (char **p = list; p && *p; p++)
        if (umount2(*p, UMOUNT_NOFOLLOW) == 0)
            n++;
        else if (errno != EINVAL && errno != ENOENT)
            return negative_errno();
    return n;
}

int csi_mount_unmount(const char *target) {
    if (isempty(target) || target[0] != '/')
        return -EINVAL;
    for (unsigned tries = 0;;) {
        CsiMount m = {};
        int r = csi_mount_at(target, &m);
        if (r == -ENOENT)
            return 0;
        if (r < 0)
            return r;
        csi_mount_done(&m);
        r = unmount_below(target);
        if (r < 0 && r != -EBUSY)
            return r;
        /* UMOUNT_NOFOLLOW: target is the CO's path; never follow a
         * symlink someone put there. */
        if (umount2(target, UMOUNT_NOFOLLOW) == 0)
            continue; /* there may be more stacked */
        r = negative_errno();
        if (r == -EINVAL)
            return 0; /* not a mount point after all (it went meanwhile) */
        if (r != -EBUSY || ++tries >= CSI_UMOUNT_TRIES)
            return r;
        jitter_sleep();
    }
}

int csi_mount_check_empty(const char *target) {
    if (isempty(target) || target[0] != '/')
        return -EINVAL;
    /* O_NOFOLLOW: mount(2) follows a symlink at target, out of the roots
     * csi_mount_check_target() checked; O_DIRECTORY: a bind of a directory
     * needs one. */
    _cleanup_close_ int fd = open(target, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        return errno == ELOOP || errno == ENOTDIR ? -ENOTDIR : negative_errno();
    }
    DIR *d = fdopendir(fd);
    if (!d)
        return negative_errno();
    TAKE_FD(fd);
    int r = 0;
    struct dirent *de;
    errno = 0;
    while ((de = readdir(d))) {
        if (streq(de->d_name, ".") || streq(de->d_name, ".."))
            continue;
        r = -ENOTEMPTY;
        break;
    }
    if (!de && errno > 0)
        r = -errno;
    closedir(d);
    return r;
}

int csi_mount_bind(const char *source, dev_t devno, const char *target, unsigned long flags) {
    if (isempty(source) || isempty(target) || target[0] != '/' ||
        (flags & ~(MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME)))
        return -EINVAL;

    CsiMount m = {};
    int r = csi_mount_at(target, &m);
    if (r >= 0) {
        csi_mount_done(&m);
        return -EBUSY; /* never stack a mount over one we did not check */
    }
    if (r != -ENOENT)
        return r;

    bool made = false;
    if (mkdir(target, 0750) == 0)
        made = true;
    else if (errno != EEXIST)
        return negative_errno();
    else if ((r = csi_mount_check_empty(target)) < 0)
        return r; /* checked by the caller already, but files may have come since */

    /* Recursive: the workspace's cache is a mount inside its FUSE mount,
     * and a plain bind would leave the pod without it. Then a slave: a
     * shared copy would carry an unmount done on the pod's side (a lazy
     * one, say) back to the host's cache mount; as a slave it still
     * receives what the host mounts. */
    if (mount(source, target, NULL, MS_BIND | MS_REC, NULL) < 0) {
        r = negative_errno();
        goto fail;
    }
    if (mount(NULL, target, NULL, MS_SLAVE | MS_REC, NULL) < 0) {
        r = negative_errno();
        goto fail_unmount;
    }
    /* A bind takes the flags of its source; the ones asked for are set on
     * the whole tree (the cache mount inside too: a read-only volume must
     * be read-only all through), which a remount would not do. */
    if (flags) {
        struct mount_attr attr = {
            .attr_set = ((flags & MS_RDONLY) ? MOUNT_ATTR_RDONLY : 0) | ((flags & MS_NOSUID) ? MOUNT_ATTR_NOSUID : 0) |
                        ((flags & MS_NODEV) ? MOUNT_ATTR_NODEV : 0) | ((flags & MS_NOEXEC) ? MOUNT_ATTR_NOEXEC : 0) |
                        ((flags & MS_NOATIME) ? MOUNT_ATTR_NOATIME : 0),
            .attr_clr = (flags & MS_NOATIME) ? MOUNT_ATTR__ATIME : 0,
        };
        if (mount_setattr(AT_FDCWD, target, AT_RECURSIVE | AT_SYMLINK_NOFOLLOW, &attr, sizeof attr) < 0) {
            r = negative_errno();
            goto fail_unmount;
        }
    }
    r = csi_mount_at(target, &m);
    if (r < 0) {
        r = r == -ENOENT ? -EIO : r;
        goto fail_unmount;
    }
    bool ok = m.devno == devno && m.read_only == !!(flags & MS_RDONLY);
    csi_mount_done(&m);
    if (!ok) {
        r = -EIO;
        goto fail_unmount;
    }
    return 0;

fail_unmount:
    (void) unmount_below(target);
    (void) umount2(target, UMOUNT_NOFOLLOW);
fail:
    if (made)
        (void) rmdir(target);
    return r;
}

int csi_mount_check_target(const char *target, char *const *roots) {
    if (isempty(target) || target[0] != '/' || strlen(target) >= PATH_MAX)
        return -EINVAL;
    if (strstr(target, "//") || strstr(target, "/./") || strstr(target, "/../") ||
        (strlen(target) >= 2 && (streq(target + strlen(target) - 2, "/.") ||
                                 (strlen(target) >= 3 && streq(target + strlen(target) - 3, "/..")))) ||
        target[strlen(target) - 1] == '/')
        return -EINVAL;

    _cleanup_free_ char *parent = strdup(target);
    if (!parent)
        return -ENOMEM;
    char *slash = strrchr(parent, '/');
    if (slash == parent)
        slash[1] = 0;
    else
        *slash = 0;
    /* The parent is the CO's directory (never inside a FUSE mount), so
     * resolving it is safe; a symlink in it must not lead out of roots. */
    _cleanup_free_ char *real = realpath(parent, NULL);
    if (!real)
        return errno == ENOENT ? -ENOENT : negative_errno();
    for (char *const *root = roots; root && *root; root++) {
        _cleanup_free_ char *rr = realpath(*root, NULL);
        if (!rr)
            continue;
        if (same_path(real, rr) || below(real, rr))
            return 0;
    }
    return -EPERM;
}
