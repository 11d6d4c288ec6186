/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

#include <libmount.h>

#include "fuse-cleanup.h"
#include "util.h"

#define FUSECTL_SUPER_MAGIC 0x65735543

void fuse_cleanup_mounts_free(FuseMount *m, size_t n) {
    for (size_t i = 0; m && i < n; i++) {
        free(m[i].target);
        free(m[i].fstype);
    }
    free(m);
}

static bool is_fuse(const char *fstype) {
    return fstype && (streq(fstype, "fuse") || streq(fstype, "fuseblk") || strncmp(fstype, "fuse.", 5) == 0);
}

/* The kernel never writes a line libmount cannot read; a test file might.
 * Skip it rather than fail the whole table. */
static int skip_bad_line(struct libmnt_table *tb, const char *filename, int line) {
    return 1;
}

int fuse_cleanup_read_mounts(const char *mountinfo_path, FuseMount **ret, size_t *ret_n) {
    struct libmnt_table *tb = mnt_new_table();
    if (!tb)
        return -ENOMEM;
    (void) mnt_table_set_parser_errcb(tb, skip_bad_line);
    int r = mnt_table_parse_file(tb, mountinfo_path ?: "/proc/self/mountinfo");
    if (r < 0) {
        mnt_unref_table(tb);
        return r;
    }
    FuseMount *m = NULL;
    size_t n = 0, cap = 0;
    struct libmnt_iter *it = mnt_new_iter(MNT_ITER_FORWARD);
    struct libmnt_fs *fs;
    r = it ? 0 : -ENOMEM;
    while (r >= 0 && mnt_table_next_fs(tb, it, &fs) == 0) {
        const char *type = mnt_fs_get_fstype(fs), *target = mnt_fs_get_target(fs);
        if (!is_fuse(type) || !target)
            continue;
        if (n == cap) {
            cap = MAX(cap * 2, (size_t) 8);
            FuseMount *t = realloc(m, cap * sizeof(*m));
            if (!t) {
                r = -ENOMEM;
                break;
            }
            m = t;
        }
        /* libmount has unescaped the target ("\040" is a space). */
        m[n] = (FuseMount) { .target = strdup(target), .fstype = strdup(type), .devno = mnt_fs_get_devno(fs),
                             .id = mnt_fs_get_id(fs) };
        if (!m[n].target || !m[n].fstype) {
            free(m[n].target);
            free(m[n].fstype);
            r = -ENOMEM;
            break;
        }
        n++;
    }
    mnt_free_iter(it);
    mnt_unref_table(tb);
    if (r < 0) {
        fuse_cleanup_mounts_free(m, n);
        return r;
    }
    *ret = m;
    *ret_n = n;
    return 0;
}

const FuseMount *fuse_cleanup_find(const FuseMount *m, size_t n, const char *target) {
    for (size_t i = n; i > 0; i--)
        if (streq(m[i - 1].target, target))
            return &m[i - 1];
    return NULL;
}

static bool fusectl_mounted(void) {
    struct statfs sfs;
    return statfs(FUSECTL_DIR, &sfs) == 0 && sfs.f_type == FUSECTL_SUPER_MAGIC;
}

int fuse_cleanup_ensure_fusectl(void) {
    if (fusectl_mounted())
        return 0;
    if (mount("fusectl", FUSECTL_DIR, "fusectl", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) {
        int r = negative_errno();
        /* Someone else mounted it between our check and our mount. */
        if (r == -EBUSY && fusectl_mounted())
            return 0;
        return r;
    }
    return 1;
}

/* fusectl names a connection by the superblock's s_dev as the kernel
 * encodes it; FUSE superblocks are anonymous devices (major 0), for which
 * that is the minor number. */
static int conn_path(dev_t devno, const char *file, char *buf, size_t n) {
    if (major(devno) != 0)
        return -EINVAL;
    snprintf(buf, n, FUSECTL_DIR "/%u/%s", minor(devno), file);
    return 0;
}

int fuse_cleanup_abort(dev_t devno) {
    char p[128];
    int r = conn_path(devno, "abort", p, sizeof p);
    if (r < 0)
        return r;
    return write_string_file(p, "1");
}

int fuse_cleanup_waiting(dev_t devno, unsigned *ret) {
    char p[128];
    int r = conn_path(devno, "waiting", p, sizeof p);
    if (r < 0)
        return r;
    _cleanup_free_ char *s = NULL;
    r = read_one_line_file(p, &s);
    if (r < 0)
        return r;
    unsigned v;
    if (sscanf(s, "%u", &v) != 1)
        return -EBADMSG;
    *ret = v;
    return 0;
}

int fuse_cleanup_mountpoint(const char *target) {
    int removed = 0;
    bool fusectl_tried = false;

    /* Bounded: a mount point can hold a stack of dead mounts left by
     * earlier crashes; more than 16 means something else keeps mounting. */
    for (int round = 0; round < 16; round++) {
        FuseMount *m = NULL;
        size_t n = 0;
        int r = fuse_cleanup_read_mounts(NULL, &m, &n);
        if (r < 0)
            return r;
        const FuseMount *fm = fuse_cleanup_find(m, n, target);
        dev_t dev = fm ? fm->devno : 0;
        fuse_cleanup_mounts_free(m, n);
        if (!fm) {
            /* Nothing (left) at target: it must be a usable directory now.
             * stat() is safe here, no FUSE mount sits on the path's end. */
            struct stat st;
            if (stat(target, &st) < 0)
                return errno == ENOENT ? removed : negative_errno();
            if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;
            return removed;
        }

        /* Abort first: a detach alone leaves the connection (and anyone
         * blocked in it) hanging until the last user goes away. */
        if (!fusectl_tried) {
            (void) fuse_cleanup_ensure_fusectl();
            fusectl_tried = true;
        }
        r = fuse_cleanup_abort(dev);
        /* A failed abort is not fatal: a dead daemon's connection
         * already answers ENOTCONN; detach anyway. */
        (void) r;
        if (umount2(target, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL)
            return negative_errno();
        removed++;
    }
    return -EBUSY;
}
