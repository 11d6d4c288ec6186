/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <libmount.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "dev-util.h"
#include "mount.h"
#include "util.h"

/* Unmount retries on EBUSY: a short-lived opener (a shell's cwd, a
 * scanner) gets ~1-2 s to go away, then we name who holds it. */
#define MOUNT_UMOUNT_TRIES 10u

void mount_info_done(MountInfo *m) {
    if (!m)
        return;
    free(m->target);
    free(m->source);
    free(m->fstype);
    free(m->options);
    *m = (MountInfo) {};
}

static void mnt_free_tablep(struct libmnt_table **t) {
    if (*t)
        mnt_unref_table(*t);
}
static void mnt_free_iterp(struct libmnt_iter **i) {
    if (*i)
        mnt_free_iter(*i);
}
static void mnt_free_contextp(struct libmnt_context **c) {
    if (*c)
        mnt_free_context(*c);
}

static int strdup_null(const char *s, char **ret) {
    if (!s) {
        *ret = NULL;
        return 0;
    }
    *ret = strdup(s);
    return *ret ? 0 : -ENOMEM;
}

/* The device behind a mount. mountinfo's major:minor is the filesystem's
 * st_dev, which is the block device for ext4 and XFS but an anonymous
 * device (major 0) for btrfs, whose one superblock may span devices; then
 * the source names the device. */
static dev_t fs_devno(struct libmnt_fs *fs) {
    dev_t devno = mnt_fs_get_devno(fs);
    const char *src = mnt_fs_get_source(fs);
    struct stat st;
    if (major(devno) == 0 && src && strncmp(src, "/dev/", 5) == 0 && stat(src, &st) == 0 && S_ISBLK(st.st_mode))
        return st.st_rdev;
    return devno;
}

static int mount_info_from_fs(struct libmnt_fs *fs, MountInfo *ret) {
    MountInfo m = {
        .devno = fs_devno(fs),
        .id = mnt_fs_get_id(fs),
    };
    _cleanup_free_ char *opts = mnt_fs_strdup_options(fs); /* VFS + fs options */
    if (strdup_null(mnt_fs_get_target(fs), &m.target) < 0 || strdup_null(mnt_fs_get_source(fs), &m.source) < 0 ||
        strdup_null(mnt_fs_get_fstype(fs), &m.fstype) < 0 || strdup_null(opts, &m.options) < 0) {
        mount_info_done(&m);
        return -ENOMEM;
    }
    *ret = m;
    return 0;
}

/* /proc/self/mountinfo, parsed by libmount (which unescapes "\040"). */
static int load_mountinfo(struct libmnt_table **ret) {
    errno = 0;
    struct libmnt_table *t = mnt_new_table_from_file("/proc/self/mountinfo");
    if (!t)
        return errno > 0 ? -errno : -EIO;
    *ret = t;
    return 0;
}

/* The kernel lists targets canonicalised; compare against the same. */
static int canonical_target(const char *target, char **ret) {
    char *p = realpath(target, NULL);
    if (!p && !(p = strdup(target)))
        return -ENOMEM;
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/')
        p[--n] = 0;
    *ret = p;
    return 0;
}

int mount_find_by_target(const char *target, MountInfo *ret) {
    if (isempty(target) || !ret)
        return -EINVAL;
    _cleanup_free_ char *t = NULL;
    int r = canonical_target(target, &t);
    if (r < 0)
        return r;
    _cleanup_(mnt_free_tablep) struct libmnt_table *tb = NULL;
    r = load_mountinfo(&tb);
    if (r < 0)
        return r;
    /* Backwards: with stacked mounts the last one is what the path shows. */
    _cleanup_(mnt_free_iterp) struct libmnt_iter *it = mnt_new_iter(MNT_ITER_BACKWARD);
    if (!it)
        return -ENOMEM;
    struct libmnt_fs *fs;
    while (mnt_table_next_fs(tb, it, &fs) == 0) {
        const char *ft = mnt_fs_get_target(fs);
        if (ft && streq(ft, t))
            return mount_info_from_fs(fs, ret);
    }
    return -ENOENT;
}

int mount_find_by_devno(dev_t devno, MountInfo *ret) {
    if (!ret || devno == 0)
        return -EINVAL;
    _cleanup_(mnt_free_tablep) struct libmnt_table *tb = NULL;
    int r = load_mountinfo(&tb);
    if (r < 0)
        return r;
    _cleanup_(mnt_free_iterp) struct libmnt_iter *it = mnt_new_iter(MNT_ITER_FORWARD);
    if (!it)
        return -ENOMEM;
    struct libmnt_fs *fs, *first = NULL;
    while (mnt_table_next_fs(tb, it, &fs) == 0) {
        if (fs_devno(fs) != devno)
            continue;
        /* Prefer the mount of the filesystem's root over bind mounts of
         * its subdirectories. */
        const char *root = mnt_fs_get_root(fs);
        if (root && streq(root, "/"))
            return mount_info_from_fs(fs, ret);
        if (!first)
            first = fs;
    }
    return first ? mount_info_from_fs(first, ret) : -ENOENT;
}

int mount_volume(const char *source, const char *target, const char *fstype, const char *options) {
    if (isempty(source) || isempty(target) || target[0] != '/' || isempty(fstype))
        return -EINVAL;

    struct stat st;
    if (stat(source, &st) < 0)
        return negative_errno();

    int r = mkdir_p(target, 0755);
    if (r < 0)
        return r;

    MountInfo existing = {};
    if (mount_find_by_target(target, &existing) >= 0) {
        /* Never stack a second mount over one we did not check. */
        mount_info_done(&existing);
        return -EBUSY;
    }

    _cleanup_(mnt_free_contextp) struct libmnt_context *cxt = mnt_new_context();
    if (!cxt)
        return -ENOMEM;
    /* NOTAB: source and target are given; never let an fstab entry add or
     * change options. No mtab/utab writing: the kernel's mountinfo is the
     * only truth we use. */
    if (mnt_context_set_optsmode(cxt, MNT_OMODE_NOTAB) < 0 || mnt_context_disable_mtab(cxt, 1) < 0 ||
        mnt_context_set_source(cxt, source) < 0 || mnt_context_set_target(cxt, target) < 0 ||
        mnt_context_set_fstype(cxt, fstype) < 0 || (options && mnt_context_set_options(cxt, options) < 0))
        return -ENOMEM;

    r = mnt_context_mount(cxt);
    if (mnt_context_helper_executed(cxt)) {
        /* A /sbin/mount.<type> helper ran: its exit status is mount(8)'s
         * (32 = mount failure), no errno to pass on. */
        if (mnt_context_get_helper_status(cxt) != 0)
            return -EIO;
    } else if (mnt_context_syscall_called(cxt)) {
        int e = mnt_context_get_syscall_errno(cxt);
        if (e != 0)
            return -e;
    } else if (r < 0)
        return r; /* libmount failed before mount(2): usually -EINVAL/-ENOMEM */
    if (r != 0 || mnt_context_get_status(cxt) != 1)
        return r < 0 ? r : -EIO;

    /* Verify in the kernel's table: the target is a mount of source. */
    MountInfo m = {};
    r = mount_find_by_target(target, &m);
    if (r < 0)
        return r == -ENOENT ? -EIO : r;
    bool ok = !S_ISBLK(st.st_mode) || m.devno == st.st_rdev;
    mount_info_done(&m);
    return ok ? 0 : -EIO;
}

static bool path_is_below(const char *p, const char *dir, size_t dlen) {
    if (strncmp(p, dir, dlen) != 0)
        return false;
    if (dlen == 1) /* "/" */
        return true;
    return p[dlen] == 0 || p[dlen] == '/';
}

static bool link_is_below(const char *link, const char *dir, size_t dlen) {
    char buf[PATH_MAX];
    ssize_t n = readlink(link, buf, sizeof buf - 1);
    if (n <= 0)
        return false;
    buf[n] = 0;
    return path_is_below(buf, dir, dlen);
}

/* Does /proc/<pid> have anything below dir: cwd, root, an open fd, or a
 * mapped file (an mmapped library keeps a mount busy just like an fd). */
static bool pid_holds(const char *pid, const char *dir, size_t dlen) {
    char p[300];
    snprintf(p, sizeof p, "/proc/%s/cwd", pid);
    if (link_is_below(p, dir, dlen))
        return true;
    snprintf(p, sizeof p, "/proc/%s/root", pid);
    if (link_is_below(p, dir, dlen))
        return true;

    snprintf(p, sizeof p, "/proc/%s/fd", pid);
    DIR *d = opendir(p);
    if (d) {
        struct dirent *de;
        bool found = false;
        while (!found && (de = readdir(d))) {
            if (de->d_name[0] == '.')
                continue;
            char fp[600];
            snprintf(fp, sizeof fp, "/proc/%s/fd/%s", pid, de->d_name);
            found = link_is_below(fp, dir, dlen);
        }
        closedir(d);
        if (found)
            return true;
    }

    snprintf(p, sizeof p, "/proc/%s/maps", pid);
    _cleanup_free_ char *maps = NULL;
    if (read_full_file(p, &maps, NULL) >= 0) {
        for (char *line = maps; line && *line;) {
            char *nl = strchr(line, '\n');
            if (nl)
                *nl = 0;
            char *path = strchr(line, '/');
            if (path && path_is_below(path, dir, dlen))
                return true;
            line = nl ? nl + 1 : NULL;
        }
    }
    return false;
}

int mount_list_holders(const char *target, char ***ret) {
    if (isempty(target) || !ret)
        return -EINVAL;
    _cleanup_free_ char *dir = NULL;
    int r = canonical_target(target, &dir);
    if (r < 0)
        return r;
    size_t dlen = strlen(dir);

    _cleanup_strv_free_ char **l = NULL;

    /* A mount below the target keeps it busy too. */
    _cleanup_(mnt_free_tablep) struct libmnt_table *tb = NULL;
    if (load_mountinfo(&tb) >= 0) {
        _cleanup_(mnt_free_iterp) struct libmnt_iter *it = mnt_new_iter(MNT_ITER_FORWARD);
        struct libmnt_fs *fs;
        while (it && mnt_table_next_fs(tb, it, &fs) == 0) {
            const char *ft = mnt_fs_get_target(fs);
            if (ft && !streq(ft, dir) && path_is_below(ft, dir, dlen)) {
                _cleanup_free_ char *e = NULL;
                if (asprintf(&e, "mount %s", ft) < 0 || strv_extend(&l, e) < 0)
                    return -ENOMEM;
            }
        }
    }

    /* Processes in other mount namespaces report paths in their own
     * namespace; this finds the holders that share ours (the agent's). */
    DIR *d = opendir("/proc");
    if (!d)
        return negative_errno();
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!isdigit((unsigned char) de->d_name[0]))
            continue;
        if (!pid_holds(de->d_name, dir, dlen))
            continue;
        char p[300];
        _cleanup_free_ char *comm = NULL, *e = NULL;
        snprintf(p, sizeof p, "/proc/%s/comm", de->d_name);
        if (read_one_line_file(p, &comm) < 0)
            continue; /* exited meanwhile */
        if (asprintf(&e, "%s %s", de->d_name, comm) < 0 || strv_extend(&l, e) < 0) {
            closedir(d);
            return -ENOMEM;
        }
    }
    closedir(d);

    if (!l && !(l = calloc(1, sizeof(char *))))
        return -ENOMEM;
    *ret = TAKE_PTR(l);
    return 0;
}

int mount_unmount(const char *target, bool lazy, char ***ret_holders) {
    if (isempty(target))
        return -EINVAL;
    MountInfo m = {};
    int r = mount_find_by_target(target, &m);
    if (r < 0)
        return r; /* -ENOENT: not a mount point */
    mount_info_done(&m);

    for (unsigned attempt = 0;; attempt++) {
        /* UMOUNT_NOFOLLOW: a symlink swapped in at target must not redirect
         * us to someone else's mount. */
        if (umount2(target, (lazy ? MNT_DETACH : 0) | UMOUNT_NOFOLLOW) >= 0)
            return 0;
        if (errno == EINVAL)
            return -ENOENT; /* unmounted by someone else meanwhile */
        if (errno != EBUSY)
            return negative_errno();
        if (attempt + 1 >= MOUNT_UMOUNT_TRIES)
            break;
        dev_backoff_jitter();
    }

    if (ret_holders) {
        char **h = NULL;
        if (mount_list_holders(target, &h) >= 0)
            *ret_holders = h;
    }
    return -EBUSY;
}

bool mount_options_has(const char *options, const char *opt) {
    size_t n = opt ? strlen(opt) : 0;
    for (const char *c = options; n && c && *c;) {
        const char *e = strchrnul(c, ',');
        if ((size_t) (e - c) == n && strncmp(c, opt, n) == 0)
            return true;
        c = *e ? e + 1 : e;
    }
    return false;
}
