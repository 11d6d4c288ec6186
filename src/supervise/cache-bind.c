/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The cache mount's child (cache-bind.h). The child runs after fork() in a
 * process that has threads, so it calls system calls only: no allocation,
 * no stdio, no locale (strerrordesc_np reads a static table).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <libmount.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache-bind.h"
#include "proc.h"
#include "util.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/* A message built on the stack: pieces appended, cut at the end. */
typedef struct Msg {
    char buf[512];
    size_t len;
} Msg;

static void msg_add(Msg *m, const char *s) {
    while (s && *s && m->len + 1 < sizeof m->buf)
        m->buf[m->len++] = *s++;
    m->buf[m->len] = '\0';
}

static _Noreturn void child_fail(int msgfd, int err, const char *what, const char *path) {
    Msg m = {};
    msg_add(&m, what);
    if (path) {
        msg_add(&m, " ");
        msg_add(&m, path);
    }
    if (err) {
        msg_add(&m, ": ");
        msg_add(&m, strerrordesc_np(err) ?: "unknown error");
    }
    (void) !write(msgfd, m.buf, m.len);
    _exit(CACHE_BIND_FAILED);
}

/* A .gitignore that ignores everything, as Python's venv and pytest do
 * in theirs: a repository cloned at the workspace's root does not see the
 * cache in `git status` or take it in `git add -A`. Made when missing
 * (after an `rm -rf` of the cache too, at the next start), never
 * rewritten; best effort: a full volume must not cost the cache. */
static void child_gitignore(int src, const struct stat *owner) {
    static const char text[] = "# layoutd: this is the workspace's cache of derived data, not its sources.\n*\n";
    int fd = openat(src, ".gitignore", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    /* The owner's before a byte: a child killed in between (its timeout)
     * leaves an empty file the workspace's user can fix, never a root one. */
    if (fchown(fd, owner->st_uid, owner->st_gid) < 0 ||
        write(fd, text, sizeof text - 1) != (ssize_t) (sizeof text - 1))
        (void) unlinkat(src, ".gitignore", 0); /* never half a file */
    (void) close(fd);
}

/* The source: made with the owner's owner and mode when missing, given
 * the owner's project id (inherited) when it has one. Returns its fd. */
static int child_source(const CacheBindSpec *c, const char *parent, int msgfd) {
    if (mkdir(parent, 0711) < 0 && errno != EEXIST)
        child_fail(msgfd, errno, "cannot make", parent);
    int owner = open(c->owner_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (owner < 0)
        child_fail(msgfd, errno, "cannot open the workspace's state dir", c->owner_dir);
    struct stat ost;
    if (fstat(owner, &ost) < 0)
        child_fail(msgfd, errno, "cannot stat", c->owner_dir);
    bool made = mkdir(c->source, 0700) == 0;
    if (!made && errno != EEXIST)
        child_fail(msgfd, errno, "cannot make", c->source);
    int src = open(c->source, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (src < 0)
        child_fail(msgfd, errno, "cannot open", c->source);
    if (made && (fchown(src, ost.st_uid, ost.st_gid) < 0 || fchmod(src, ost.st_mode & 07777) < 0))
        child_fail(msgfd, errno, "cannot give the owner of the state dir to", c->source);
    /* XFS project quotas: the cache is the workspace's data too. Every
     * time, not only when made: a quota set later gives the state dir a
     * project id, and the next start carries it over. */
    struct fsxattr ox = {}, sx = {};
    if (ioctl(owner, FS_IOC_FSGETXATTR, &ox) == 0 && ox.fsx_projid != 0 && ioctl(src, FS_IOC_FSGETXATTR, &sx) == 0 &&
        (sx.fsx_projid != ox.fsx_projid || !(sx.fsx_xflags & FS_XFLAG_PROJINHERIT))) {
        sx.fsx_projid = ox.fsx_projid;
        sx.fsx_xflags |= FS_XFLAG_PROJINHERIT;
        if (ioctl(src, FS_IOC_FSSETXATTR, &sx) < 0)
            child_fail(msgfd, errno, "cannot give the workspace's project id to", c->source);
    }
    child_gitignore(src, &ost);
    (void) close(owner);
    return src;
}

/* Whether the directory open at fd has entries other than . and .. */
static bool child_dir_has_entries(int fd, int msgfd, const char *name) {
    union {
        char buf[4096];
        struct {
            uint64_t ino;
            int64_t off;
            unsigned short reclen;
            unsigned char type;
            char name[];
        } d;
    } u;
    for (;;) {
        long n = syscall(SYS_getdents64, fd, u.buf, sizeof u.buf);
        if (n < 0)
            child_fail(msgfd, errno, "cannot read the cache's mount point", name);
        if (n == 0)
            return false;
        for (long off = 0; off < n;) {
            const char *e = u.buf + off + offsetof(__typeof__(u.d), name);
            if (!(e[0] == '.' && (e[1] == '\0' || (e[1] == '.' && e[2] == '\0'))))
                return true;
            unsigned short reclen;
            memcpy(&reclen, u.buf + off + offsetof(__typeof__(u.d), reclen), sizeof reclen);
            off += reclen;
        }
    }
}

static _Noreturn void child_run(const CacheBindSpec *c, const char *parent, pid_t agent, int msgfd) {
    /* Nothing of the agent's but the message pipe: not its lock, not its
     * sockets (there is no exec to close them). And no orphan: it dies
     * with the agent. */
    if (msgfd != 3) {
        if (dup2(msgfd, 3) < 0)
            _exit(CACHE_BIND_FAILED);
        msgfd = 3;
    }
    (void) syscall(SYS_close_range, 4U, ~0U, 0U);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != agent)
        _exit(CACHE_BIND_FAILED);
    int src = child_source(c, parent, msgfd);
    struct stat sst, rst, tst;
    if (fstat(src, &sst) < 0)
        child_fail(msgfd, errno, "cannot stat", c->source);

    /* The FUSE mount's root, checked to be the daemon's mount. */
    int root = open(c->mountpoint, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0)
        child_fail(msgfd, errno, "cannot open the mount", c->mountpoint);
    if (fstat(root, &rst) < 0)
        child_fail(msgfd, errno, "cannot stat the mount", c->mountpoint);
    if (c->mount_dev != 0 && rst.st_dev != c->mount_dev)
        child_fail(msgfd, ESTALE, "the daemon's mount is no longer at", c->mountpoint);

    if (mkdirat(root, c->name, 0755) < 0 && errno != EEXIST)
        child_fail(msgfd, errno, "cannot make the cache's mount point", c->name);
    /* Beneath the root, no symlink anywhere: a user who replaced the mount
     * point with a link gets a refusal, never a mount elsewhere. */
    struct open_how how = {
        .flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    int target = (int) syscall(SYS_openat2, root, c->name, &how, sizeof how);
    if (target < 0)
        child_fail(msgfd, errno,
                   errno == ELOOP || errno == ENOTDIR ? "the cache's mount point is not a directory (a symlink?):"
                                                      : "cannot open the cache's mount point",
                   c->name);
    if (fstat(target, &tst) < 0)
        child_fail(msgfd, errno, "cannot stat the cache's mount point", c->name);
    if (tst.st_dev == sst.st_dev && tst.st_ino == sst.st_ino)
        _exit(CACHE_BIND_ALREADY);
    if (tst.st_dev != rst.st_dev)
        child_fail(msgfd, EBUSY, "something else is mounted on the cache's mount point", c->name);
    /* Files written there while no cache was mounted (a tool handed the
     * path meanwhile) would be hidden under the mount: left in sight,
     * and said. */
    if (child_dir_has_entries(target, msgfd, c->name))
        child_fail(msgfd, 0,
                   "the cache's mount point holds files written while no cache was mounted; move them away and "
                   "restart the workspace:",
                   c->name);

    int tree = open_tree(src, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
    if (tree < 0)
        child_fail(msgfd, errno, "cannot clone a mount of", c->source);
    if (move_mount(tree, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
        child_fail(msgfd, errno, "cannot mount the cache on", c->name);
    _exit(CACHE_BIND_BOUND);
}

bool cache_bind_name_is_valid(const char *name) {
    return !isempty(name) && !strchr(name, '/') && !streq(name, ".") && !streq(name, "..") && strlen(name) < 256;
}

int cache_bind_start(const CacheBindSpec *spec, pid_t *ret_pid, int *ret_pidfd, int *ret_msgfd) {
    if (!spec || !spec->source || spec->source[0] != '/' || !spec->owner_dir || !spec->mountpoint ||
        !cache_bind_name_is_valid(spec->name) || !ret_pid || !ret_pidfd || !ret_msgfd)
        return -EINVAL;
    /* Everything the child needs, made before the fork. */
    _cleanup_free_ char *parent = strdup(spec->source);
    if (!parent)
        return -ENOMEM;
    char *slash = strrchr(parent, '/');
    if (!slash || slash == parent)
        return -EINVAL;
    *slash = '\0';

    int p[2];
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
        return negative_errno();
    pid_t agent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int r = negative_errno();
        safe_close(p[0]);
        safe_close(p[1]);
        return r;
    }
    if (pid == 0) {
        (void) close(p[0]);
        child_run(spec, parent, agent, p[1]);
    }
    safe_close(p[1]);
    int pidfd = proc_pidfd_open(pid);
    if (pidfd < 0) {
        /* Cannot watch it: wait for it here (it makes a few system calls;
         * only a hung FUSE mount could hold it, and then the kill ends
         * it). */
        (void) kill(pid, SIGKILL);
        (void) waitpid(pid, NULL, 0);
        safe_close(p[0]);
        return pidfd;
    }
    *ret_pid = pid;
    *ret_pidfd = pidfd;
    *ret_msgfd = p[0];
    return 0;
}

int cache_bind_finish(int pidfd, int msgfd, char *msg, size_t msg_len) {
    siginfo_t si = {};
    if (msg_len > 0)
        msg[0] = '\0';
    if (waitid(P_PIDFD, (id_t) pidfd, &si, WEXITED) < 0)
        return negative_errno();
    if (si.si_code != CLD_EXITED) {
        if (msg_len > 0)
            snprintf(msg, msg_len, "the child that mounts the cache was killed by signal %s",
                     sigabbrev_np(si.si_status) ?: "?");
        return -EINTR;
    }
    if (msgfd >= 0 && msg_len > 1) {
        ssize_t n = read(msgfd, msg, msg_len - 1);
        msg[n > 0 ? (size_t) n : 0] = '\0';
    }
    if (si.si_status == CACHE_BIND_BOUND || si.si_status == CACHE_BIND_ALREADY)
        return si.si_status;
    if (msg_len > 0 && msg[0] == '\0')
        snprintf(msg, msg_len, "the child that mounts the cache exited with status %d", si.si_status);
    return CACHE_BIND_FAILED;
}

int cache_bind_mounted(char *const *paths, size_t n, bool *found) {
    for (size_t i = 0; i < n; i++)
        found[i] = false;
    if (n == 0)
        return 0;
    struct libmnt_table *tb = mnt_new_table_from_file("/proc/self/mountinfo");
    if (!tb)
        return errno > 0 ? -errno : -EIO;
    struct libmnt_iter *it = mnt_new_iter(MNT_ITER_FORWARD);
    if (!it) {
        mnt_unref_table(tb);
        return -ENOMEM;
    }
    struct libmnt_fs *fs;
    while (mnt_table_next_fs(tb, it, &fs) == 0) {
        const char *target = mnt_fs_get_target(fs);
        for (size_t i = 0; target && i < n; i++)
            if (!found[i] && streq(target, paths[i]))
                found[i] = true;
    }
    mnt_free_iter(it);
    mnt_unref_table(tb);
    return 0;
}
