/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

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

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static char *unescape(const char *s, size_t len) {
    char *out = malloc(len + 1), *o = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\\' && i + 3 < len && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' && s[i + 2] <= '7' &&
            s[i + 3] >= '0' && s[i + 3] <= '7') {
            *o++ = (char) (((s[i + 1] - '0') << 6) | ((s[i + 2] - '0') << 3) | (s[i + 3] - '0'));
            i += 3;
        } else
            *o++ = s[i];
    }
    *o = 0;
    return out;
}

/* Splits off the next space-separated field. */
static bool next_field(const char **p, const char **ret, size_t *ret_len) {
    const char *s = *p;
    while (*s == ' ')
        s++;
    if (!*s || *s == '\n')
        return false;
    size_t n = strcspn(s, " \n");
    *ret = s;
    *ret_len = n;
    *p = s + n;
    return true;
}

int fuse_cleanup_parse_line(const char *line, FuseMount *ret) {
    /* id parent major:minor root mountpoint options [optional...] - fstype source superopts */
    const char *p = line, *f[6];
    size_t l[6];
    for (int i = 0; i < 6; i++)
        if (!next_field(&p, &f[i], &l[i]))
            return -EBADMSG;
    const char *sep;
    size_t seplen;
    do {
        if (!next_field(&p, &sep, &seplen))
            return -EBADMSG;
    } while (!(seplen == 1 && sep[0] == '-'));
    const char *fstype;
    size_t fslen;
    if (!next_field(&p, &fstype, &fslen))
        return -EBADMSG;
    bool fuse = (fslen == 4 && strncmp(fstype, "fuse", 4) == 0) ||
                (fslen > 5 && strncmp(fstype, "fuse.", 5) == 0) ||
                (fslen == 7 && strncmp(fstype, "fuseblk", 7) == 0);
    if (!fuse)
        return -ENOENT;

    unsigned maj, min;
    int id;
    if (sscanf(f[0], "%d", &id) != 1 || sscanf(f[2], "%u:%u", &maj, &min) != 2)
        return -EBADMSG;
    char *target = unescape(f[4], l[4]);
    char *type = strndup(fstype, fslen);
    if (!target || !type) {
        free(target);
        free(type);
        return -ENOMEM;
    }
    *ret = (FuseMount) { .target = target, .fstype = type, .devno = makedev(maj, min), .id = id };
    return 0;
}

int fuse_cleanup_read_mounts(const char *mountinfo_path, FuseMount **ret, size_t *ret_n) {
    _cleanup_free_ char *text = NULL;
    int r = read_full_file(mountinfo_path ?: "/proc/self/mountinfo", &text, NULL);
    if (r < 0)
        return r;
    FuseMount *m = NULL;
    size_t n = 0, cap = 0;
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        FuseMount fm;
        r = fuse_cleanup_parse_line(line, &fm);
        if (r == -ENOMEM) {
            fuse_cleanup_mounts_free(m, n);
            return r;
        }
        if (r == 0) {
            if (n == cap) {
                cap = MAX(cap * 2, (size_t) 8);
                FuseMount *t = realloc(m, cap * sizeof(*m));
                if (!t) {
                    free(fm.target);
                    free(fm.fstype);
                    fuse_cleanup_mounts_free(m, n);
                    return -ENOMEM;
                }
                m = t;
            }
            m[n++] = fm;
        }
        line = nl ? nl + 1 : NULL;
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
