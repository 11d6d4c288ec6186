/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The FUSE low-level operations over the state directory.
 *
 * Inodes (inode.c) hold file handles, not fds. An operation that needs an
 * inode's fd pins it in the fd cache (fdcache.c) for its duration; open
 * files hold their own fd, opened straight from the handle
 * (open_by_handle_at: no /proc path walk). So the fds the daemon holds are
 * bounded by the cache's bound plus what applications keep open, and
 * never grow with the number of files in the tree.
 *
 * Errors are passed through as the backing filesystem gave them: ENOSPC,
 * EDQUOT, EROFS, EIO, ENAMETOOLONG, EMFILE (only after shedding cached
 * fds could not help). No operation turns one into another.
 *
 * Locks: the inode table's lock (nlookup, hash), the fd cache's lock, and
 * cas_lock (open/writer counts, stub state, every CAS transition). Order:
 * cas_lock, then table, cache or the committer's lock (stub.c asks for a
 * stats rewrite under cas_lock; the committer drops its lock before it
 * calls back into stubs). The pool's shared lock (cas.c) is taken
 * around renames and links (they may move stubs; see gc.c) and publishes,
 * never with cas_lock held.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <time.h>

#include "wsfs.h"

/* An open directory. Kept on Fs.dirs (Fs.dirs_lock) because the kernel
 * drops the pending RELEASEDIRs of a connection that goes away under a
 * reader (an unmount, an abort): fs_free closes what is left. */
typedef struct DirHandle {
    struct DirHandle *prev, *next;
    DIR *dp;
    struct dirent *entry;
    off_t offset;
} DirHandle;

static Fs *fs_of(fuse_req_t req, WsfsOp op) {
    Fs *fs = fuse_req_userdata(req);
    atomic_fetch_add_explicit(&fs->cfg.stats->operations, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&fs->cfg.stats->ops[op], 1, memory_order_relaxed);
    return fs;
}

static Inode *inode_of(Fs *fs, fuse_ino_t ino) {
    return ino == FUSE_ROOT_ID ? &fs->inodes.root : (Inode *) (uintptr_t) ino;
}

/* The package store's own name in the root (only when there is a store). */
static bool is_store_name(Fs *fs, const Inode *parent, const char *name) {
    return fs->cfg.store_fd >= 0 && parent == &fs->inodes.root && streq(name, WSFS_STORE_NAME);
}

/* The store's name is taken in the root, whatever the state dir holds:
 * making it answers EEXIST, renaming or removing it EBUSY (a mount point
 * answers the same).
 * Returns: 0, or the positive errno to answer. */
static int reserved(Fs *fs, fuse_ino_t parent, const char *name, int err) {
    return is_store_name(fs, inode_of(fs, parent), name) ? err : 0;
}

/* Other daemons change the store: its inodes are cached for a second. */
static double timeout_of(Fs *fs, const Inode *i) {
    return i->in_store ? MIN(fs->cfg.timeout, WSFS_STORE_TIMEOUT) : fs->cfg.timeout;
}

#define PROC(fd) ({ char *_p = alloca(32); snprintf(_p, 32, "/proc/self/fd/%d", (fd)); _p; })

/* An inode's O_PATH fd, pinned in the cache while the Pin is in scope. */
typedef struct Pin {
    Fs *fs;
    Inode *i;
    int fd; /* or -errno */
} Pin;

static Pin pin(Fs *fs, Inode *i) {
    return (Pin) { fs, i, fdcache_pin(&fs->fdc, &fs->mounts, &i->slot, &i->fh) };
}

static void unpinp(Pin *p) {
    if (p->fd >= 0)
        fdcache_unpin(&p->fs->fdc, &p->i->slot);
    p->fd = -EBADF;
}
#define _cleanup_pin_ _cleanup_(unpinp)

/* One record for the group commit: a file whose data changed (full: also
 * its metadata) and up to two directories whose entries changed. */
static uint64_t record(Fs *fs, Inode *file, bool full, Inode *dir1, Inode *dir2) {
    CommitItem items[3];
    size_t n = 0;
    if (file)
        items[n++] = (CommitItem) { file->fh, full };
    if (dir1)
        items[n++] = (CommitItem) { dir1->fh, true };
    if (dir2 && dir2 != dir1)
        items[n++] = (CommitItem) { dir2->fh, true };
    return committer_add(fs->committer, items, n, -1, NULL);
}

static void entry_init(Fs *fs, struct fuse_entry_param *e) {
    *e = (struct fuse_entry_param) { .attr_timeout = fs->cfg.timeout, .entry_timeout = fs->cfg.timeout };
}

/* Looks name up in parent: an Inode with one more lookup, e filled.
 * Returns: 0, or a positive errno. */
static int do_lookup(Fs *fs, Inode *parent, const char *name, struct fuse_entry_param *e) {
    FileHandle fh;
    Inode *i;
    bool store_root = is_store_name(fs, parent, name), in_store = store_root || parent->in_store;
    entry_init(fs, e);
    _cleanup_pin_ Pin p = pin(fs, parent);
    if (p.fd < 0)
        return -p.fd;
    _cleanup_close_ int fd = store_root ? FD_RETRY(&fs->fdc, fcntl(fs->cfg.store_fd, F_DUPFD_CLOEXEC, 3))
                                        : FD_RETRY(&fs->fdc, openat(p.fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (fd < 0 || fstatat(fd, "", &e->attr, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
        return errno;
    int r = file_handle_of_fd(&fs->mounts, fd, &fh);
    if (r == -EOPNOTSUPP || r == -ENOENT)
        fh = (FileHandle) { .len = 0 }; /* no handles there: keep the fd for life */
    else if (r < 0)
        return -r;
    if ((r = inode_table_get(&fs->inodes, &e->attr, &fh, in_store, &i)) < 0)
        return -r;
    e->attr_timeout = e->entry_timeout = timeout_of(fs, i);
    if (fh.len == 0) {
        pthread_mutex_lock(&fs->inodes.lock);
        if (!i->slot.permanent) {
            i->slot.permanent = true;
            i->slot.fd = TAKE_FD(fd);
        }
        pthread_mutex_unlock(&fs->inodes.lock);
    } else
        fdcache_offer(&fs->fdc, &i->slot, TAKE_FD(fd)); /* the next operation will want it */
    e->ino = (uintptr_t) i;
    return 0;
}

/* Runs as root for many users: a new entry is made with the caller's
 * filesystem ids (setfsuid/setfsgid act on this thread only), so it
 * belongs to the caller, lands in the caller's quota (EDQUOT at create,
 * as natively; XFS lets root's chown exceed quota) and keeps a setgid
 * parent's group. The kernel checked permissions already (with the
 * caller's supplementary groups, which the daemon does not have): when the
 * backing fs refuses the caller's ids, the entry is made as root and
 * chowned (set_owner).
 * Returns: true if the ids were switched (creds_leave() then). */
static bool creds_enter(Fs *fs, fuse_req_t req) {
    const struct fuse_ctx *ctx = fuse_req_ctx(req);
    if (fs->euid != 0 || (ctx->uid == 0 && ctx->gid == 0))
        return false;
    (void) setfsgid(ctx->gid);
    (void) setfsuid(ctx->uid);
    return true;
}

static void creds_leave(bool switched) {
    if (!switched)
        return;
    (void) setfsuid(0);
    (void) setfsgid(0);
}

/* New entries belong to the caller (and keep the group of a setgid
 * parent), as on a local filesystem. The chown moves
 * the new inode into the caller's quota; when that fails (EDQUOT: the
 * caller is out of inodes) the entry is removed again and the caller gets
 * the error, as it would natively, rather than a file owned by root.
 * Returns: 0, or a positive errno (the entry is gone then). */
static int set_owner(Fs *fs, fuse_req_t req, int parent_fd, const char *name, bool dir) {
    const struct fuse_ctx *ctx = fuse_req_ctx(req);
    struct stat pst;
    if (fs->euid != 0 || (ctx->uid == 0 && ctx->gid == 0))
        return 0;
    gid_t gid = fstatat(parent_fd, "", &pst, AT_EMPTY_PATH) == 0 && (pst.st_mode & S_ISGID) ? (gid_t) -1 : ctx->gid;
    if (fchownat(parent_fd, name, ctx->uid, gid, AT_SYMLINK_NOFOLLOW) == 0)
        return 0;
    int err = errno;
    (void) unlinkat(parent_fd, name, dir ? AT_REMOVEDIR : 0);
    return err;
}

/* With the writeback cache the kernel reads pages of files opened write
 * only, and keeps O_APPEND's end of file itself (passthrough_hp does the
 * same: nothing else changes the backing files under us). */
static int open_flags(Fs *fs, int flags) {
    flags &= ~(O_CREAT | O_EXCL | O_NOCTTY | O_NOFOLLOW);
    if (fs->cfg.writeback) {
        if ((flags & O_ACCMODE) == O_WRONLY)
            flags = (flags & ~O_ACCMODE) | O_RDWR;
        flags &= ~O_APPEND;
    }
    return flags;
}

static int open_backing(Fs *fs, Inode *i, int flags) {
    if (i->fh.len > 0)
        return FD_RETRY(&fs->fdc, file_handle_open(&fs->mounts, &i->fh, flags));
    int fd = FD_RETRY(&fs->fdc, open(PROC(i->slot.fd), flags | O_CLOEXEC));
    return fd < 0 ? negative_errno() : fd;
}

/* The stub state of i, read from the xattr once. cas_lock held. */
static int stub_state(Fs *fs, Inode *i, char hex[WSFS_HEX_LEN + 1]) {
    if (i->stub == STUB_NO)
        return 0;
    _cleanup_pin_ Pin p = pin(fs, i);
    if (p.fd < 0)
        return p.fd;
    int r = cas_stub_digest(p.fd, hex);
    if (r >= 0)
        i->stub = r > 0 ? STUB_YES : STUB_NO;
    return r;
}

/* Opens a handle of i; fd: the file if the caller opened it (create),
 * else -EBADF. Returns: <0 on error, 0 on success. */
static int open_handle(Fs *fs, Inode *i, int flags, int fd, Handle **ret) {
    _cleanup_close_ int owned = fd;
    bool writable = (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
    char hex[WSFS_HEX_LEN + 1];
    int r = 0;
    _cleanup_free_ Handle *h = calloc(1, sizeof(Handle));
    if (!h)
        return -ENOMEM;
    h->obj_fd = -EBADF;
    h->writable = writable;

    /* The common case, an ordinary file: opened with no lock held. */
    pthread_mutex_lock(&fs->cas_lock);
    bool plain = i->stub == STUB_NO;
    pthread_mutex_unlock(&fs->cas_lock);
    if (plain && owned < 0 && (owned = open_backing(fs, i, open_flags(fs, flags))) < 0)
        return owned;

    pthread_mutex_lock(&fs->cas_lock);
    if (plain && i->stub != STUB_NO) {
        /* It became a stub meanwhile: start over, under the lock. */
        owned = safe_close(owned);
        plain = false;
    }
    if (!plain) {
        r = stub_state(fs, i, hex);
        if (r > 0 && writable) {
            _cleanup_pin_ Pin p = pin(fs, i);
            r = p.fd < 0 ? p.fd : stub_copy_up(fs, i, p.fd, hex, (flags & O_TRUNC) ? 0 : UINT64_MAX);
        }
        if (r >= 0 && owned < 0 && (owned = open_backing(fs, i, open_flags(fs, flags))) < 0)
            r = owned;
        if (r > 0 && !writable) {
            _cleanup_pin_ Pin p = pin(fs, i);
            h->obj_fd = p.fd < 0 ? p.fd : stub_open_object(fs, i, p.fd, hex);
            h->copyups = atomic_load(&i->copyups);
            if (h->obj_fd == -ENOENT)
                i->stub = STUB_NO; /* the stub's own data it is */
            else if (h->obj_fd < 0)
                r = h->obj_fd;
        }
    }
    if (r >= 0) {
        h->next = fs->handles;
        if (h->next)
            h->next->prev = h;
        fs->handles = h;
        i->opens++;
        if (writable) {
            i->writers++;
            i->wgen++;
        }
    }
    pthread_mutex_unlock(&fs->cas_lock);
    if (r < 0)
        return r;
    /* The handle holds the inode: a FORGET may come before its RELEASE. */
    inode_ref(&fs->inodes, i);
    fdcache_charge(&fs->fdc, h->obj_fd >= 0 ? 2 : 1);
    h->fd = TAKE_FD(owned);
    *ret = TAKE_PTR(h);
    return 0;
}

static void handle_close(Fs *fs, Inode *i, Handle *h, fuse_req_t reply_to);

static void op_init(void *userdata, struct fuse_conn_info *conn) {
    Fs *fs = userdata;
    atomic_fetch_add(&fs->cfg.stats->ops[OP_INIT], 1);
    /* O_TRUNC arrives with the open, so a stub opened with O_TRUNC is not
     * copied up only to be truncated. */
    if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
        conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
    if (fs->cfg.writeback && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
        conn->want |= FUSE_CAP_WRITEBACK_CACHE;
    else
        fs->cfg.writeback = false;
    if (fs->cfg.splice) {
        /* Replies to READ are spliced from the backing file (no copy
         * through our memory); WRITE data is spliced in. */
        conn->want |= conn->capable & (FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE | FUSE_CAP_SPLICE_READ);
    } else
        conn->want &= ~(FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE | FUSE_CAP_SPLICE_READ);
    conn->max_write = 1024 * 1024;
    /* Fewer requests per file (README, "Choices, measured"). A symlink's
     * target never changes (a new target is a new inode), and nothing but
     * this daemon changes the state dir, so the kernel may keep targets in
     * its page cache. */
    if (fs->cfg.cache_symlinks && (conn->capable & FUSE_CAP_CACHE_SYMLINKS))
        conn->want |= FUSE_CAP_CACHE_SYMLINKS;
    else
        conn->want &= ~FUSE_CAP_CACHE_SYMLINKS;
    if (fs->cfg.parallel_dirops && (conn->capable & FUSE_CAP_PARALLEL_DIROPS))
        conn->want |= FUSE_CAP_PARALLEL_DIROPS;
    else
        conn->want &= ~FUSE_CAP_PARALLEL_DIROPS;
    /* auto: READDIRPLUS for the first read of a directory and when its
     * entries' attributes were used (ls -l, find -type), READDIR after. */
    conn->want &= ~(FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO);
    if (fs->cfg.readdirplus > 0)
        conn->want |= conn->capable & FUSE_CAP_READDIRPLUS;
    if (fs->cfg.readdirplus == 2)
        conn->want |= conn->capable & FUSE_CAP_READDIRPLUS_AUTO;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name) {
    Fs *fs = fs_of(req, OP_LOOKUP);
    struct fuse_entry_param e;
    int err = do_lookup(fs, inode_of(fs, parent), name, &e);
    /* Not in the store: other daemons make names there. */
    if (err == ENOENT && fs->cfg.negative_entries && !inode_of(fs, parent)->in_store) {
        /* A negative entry, cached for the entry timeout: the next stat or
         * open of this name (an installer's existence check, then its
         * create; a resolver's probes) asks nothing. Safe because nothing
         * but this daemon makes names in the state dir, and the kernel
         * drops the negative entry itself when a name is made through
         * the mount. */
        entry_init(fs, &e);
        e.ino = 0;
        e.attr_timeout = 0;
        fuse_reply_entry(req, &e);
    } else if (err)
        fuse_reply_err(req, err);
    else
        fuse_reply_entry(req, &e);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
    Fs *fs = fs_of(req, OP_FORGET);
    inode_unref(&fs->inodes, &fs->fdc, inode_of(fs, ino), nlookup);
    fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets) {
    Fs *fs = fs_of(req, OP_FORGET);
    for (size_t k = 0; k < count; k++)
        inode_unref(&fs->inodes, &fs->fdc, inode_of(fs, forgets[k].ino), forgets[k].nlookup);
    fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    Fs *fs = fs_of(req, OP_GETATTR);
    Inode *i = inode_of(fs, ino);
    struct stat st;
    /* An open file: its own fd, no cache slot needed. */
    if (fi && i->type == S_IFREG) {
        if (fstat(((Handle *) (uintptr_t) fi->fh)->fd, &st) < 0)
            return (void) fuse_reply_err(req, errno);
        return (void) fuse_reply_attr(req, &st, timeout_of(fs, i));
    }
    _cleanup_pin_ Pin p = pin(fs, i);
    if (p.fd < 0)
        return (void) fuse_reply_err(req, -p.fd);
    if (fstatat(p.fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
        return (void) fuse_reply_err(req, errno);
    fuse_reply_attr(req, &st, timeout_of(fs, i));
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int valid, struct fuse_file_info *fi) {
    Fs *fs = fs_of(req, OP_SETATTR);
    Inode *i = inode_of(fs, ino);
    struct stat st;
    int r = 0;

    _cleanup_pin_ Pin p = pin(fs, i);
    if (p.fd == -ESTALE && !(valid & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID | FUSE_SET_ATTR_SIZE))) {
        /* With the writeback cache the kernel writes an inode's times back
         * on its own (write_inode, at syncfs), also for a file deleted
         * since (git's tmp_pack_*, index.lock). ESTALE means the inode is
         * gone from the backing filesystem and nothing holds it open, so
         * the times can never be seen again: succeed, or the caller's
         * syncfs(2) fails with "Stale file handle" for nothing. */
        memset(&st, 0, sizeof st);
        st.st_ino = ino;
        st.st_mode = i->type | 0600;
        st.st_atim = attr->st_atim;
        st.st_mtim = attr->st_mtim;
        st.st_ctim = attr->st_ctim;
        return (void) fuse_reply_attr(req, &st, 0);
    }
    if (p.fd < 0)
        return (void) fuse_reply_err(req, -p.fd);
    /* With the writeback cache the kernel writes a file's times back
     * itself, and does so after every link of it (for the ctime). A store
     * file is linked by every install: when the times sent are the ones
     * it has, that write-back is answered without touching it (no ctime
     * change, no commit record). Other times are set as asked: this
     * mount's cached mtime can still overwrite one another workspace set
     * (the writeback cache keeps a regular file's mtime in the kernel). */
    if (i->in_store && !fi && !(valid & ~(FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_CTIME))) {
        if (fstatat(p.fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
            return (void) fuse_reply_err(req, errno);
        bool same = (!(valid & FUSE_SET_ATTR_ATIME) || (attr->st_atim.tv_sec == st.st_atim.tv_sec &&
                                                        attr->st_atim.tv_nsec == st.st_atim.tv_nsec)) &&
                    (!(valid & FUSE_SET_ATTR_MTIME) || (attr->st_mtim.tv_sec == st.st_mtim.tv_sec &&
                                                        attr->st_mtim.tv_nsec == st.st_mtim.tv_nsec));
        if (same)
            return (void) fuse_reply_attr(req, &st, timeout_of(fs, i));
    }
    pthread_mutex_lock(&fs->cas_lock);
    if (valid & FUSE_SET_ATTR_MODE)
        r = chmod(PROC(p.fd), attr->st_mode) < 0 ? negative_errno() : 0;
    if (r >= 0 && (valid & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID))) {
        uid_t uid = (valid & FUSE_SET_ATTR_UID) ? attr->st_uid : (uid_t) -1;
        gid_t gid = (valid & FUSE_SET_ATTR_GID) ? attr->st_gid : (gid_t) -1;
        r = fchownat(p.fd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0 ? negative_errno() : 0;
    }
    if (r >= 0 && (valid & FUSE_SET_ATTR_SIZE))
        r = stub_truncate(fs, i, p.fd, attr->st_size);
    if (r >= 0 && (valid & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME))) {
        struct timespec tv[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_nsec = UTIME_OMIT } };
        if (valid & FUSE_SET_ATTR_ATIME_NOW)
            tv[0].tv_nsec = UTIME_NOW;
        else if (valid & FUSE_SET_ATTR_ATIME)
            tv[0] = attr->st_atim;
        if (valid & FUSE_SET_ATTR_MTIME_NOW)
            tv[1].tv_nsec = UTIME_NOW;
        else if (valid & FUSE_SET_ATTR_MTIME)
            tv[1] = attr->st_mtim;
        if (fi && i->type == S_IFREG)
            r = futimens(((Handle *) (uintptr_t) fi->fh)->fd, tv) < 0 ? negative_errno() : 0;
        else
            r = utimensat(AT_FDCWD, PROC(p.fd), tv, 0) < 0 ? negative_errno() : 0;
    }
    pthread_mutex_unlock(&fs->cas_lock);
    if (r < 0)
        return (void) fuse_reply_err(req, -r);
    if (fstatat(p.fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
        return (void) fuse_reply_err(req, errno);
    if (!S_ISLNK(st.st_mode)) /* a symlink cannot be opened to be synced */
        record(fs, i, true, NULL, NULL);
    fuse_reply_attr(req, &st, timeout_of(fs, i));
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino) {
    Fs *fs = fs_of(req, OP_READLINK);
    char buf[PATH_MAX + 1];
    _cleanup_pin_ Pin p = pin(fs, inode_of(fs, ino));
    if (p.fd < 0)
        return (void) fuse_reply_err(req, -p.fd);
    ssize_t n = readlinkat(p.fd, "", buf, sizeof(buf));
    if (n < 0)
        return (void) fuse_reply_err(req, errno);
    if (n == sizeof(buf))
        return (void) fuse_reply_err(req, ENAMETOOLONG);
    buf[n] = 0;
    fuse_reply_readlink(req, buf);
}

static void make_node(fuse_req_t req, Fs *fs, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev,
                      const char *link) {
    Inode *pi = inode_of(fs, parent);
    struct fuse_entry_param e;
    int r, err = reserved(fs, parent, name, EEXIST);
    if (err)
        return (void) fuse_reply_err(req, err);
    _cleanup_pin_ Pin p = pin(fs, pi);
    if (p.fd < 0)
        return (void) fuse_reply_err(req, -p.fd);
    for (int as_caller = 1; as_caller >= 0; as_caller--) {
        bool sw = as_caller && creds_enter(fs, req);
        r = link ? symlinkat(link, p.fd, name)
            : S_ISDIR(mode) ? mkdirat(p.fd, name, mode)
                            : mknodat(p.fd, name, mode, rdev);
        err = r < 0 ? errno : 0;
        creds_leave(sw);
        if (r == 0 && !sw)
            err = set_owner(fs, req, p.fd, name, S_ISDIR(mode));
        if (r == 0 || !sw || (err != EACCES && err != EPERM))
            break;
    }
    if (r < 0)
        return (void) fuse_reply_err(req, err);
    if (!err)
        err = do_lookup(fs, pi, name, &e);
    if (err)
        return (void) fuse_reply_err(req, err);
    record(fs, NULL, false, pi, NULL);
    fuse_reply_entry(req, &e);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev) {
    make_node(req, fs_of(req, OP_MKNOD), parent, name, mode, rdev, NULL);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode) {
    make_node(req, fs_of(req, OP_MKDIR), parent, name, S_IFDIR | mode, 0, NULL);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name) {
    make_node(req, fs_of(req, OP_SYMLINK), parent, name, S_IFLNK, 0, link);
}

/* How a clone gets its data (by the store file's mtime: a tool that
 * sets an old one, cp -p or tar, makes a fresh file look settled, which
 * costs time, not correctness). The kernel makes a reflink wait until the
 * source's dirty pages are on disk (generic_remap_file_range_prep,
 * read, not measured): a store file that an install has
 * just written (the tenant's first install, which fills the store and
 * links at once) would cost one synchronous write per file. So a small
 * store file (most of a package store: 58,600 of the test store's 60,060
 * files are under 64 KiB) modified in the last CLONE_SETTLED_S seconds
 * (the kernel's default dirty expiry is 30 s) is copied through memory;
 * an older one, or a larger one, shares its extents (copy_file_range). */
#define CLONE_COPY_MAX (64 * 1024)
#define CLONE_SETTLED_S 30

/* Copies len bytes from src to dst (both at offset 0) through memory.
 * Returns: <0 on error, 0 on success. */
static int copy_small(int src, int dst, size_t len) {
    char buf[CLONE_COPY_MAX];
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(src, buf, MIN(sizeof(buf), len - done), (off_t) done);
        if (n < 0)
            return negative_errno();
        if (n == 0)
            break; /* shorter now: the clone is what there was */
        for (ssize_t w = 0; w < n;) {
            ssize_t k = pwrite(dst, buf + w, (size_t) (n - w), (off_t) (done + (size_t) w));
            if (k < 0)
                return negative_errno();
            w += k;
        }
        done += (size_t) n;
    }
    return 0;
}

/* link(2) from the package store into the workspace (README, "The
 * package store"): the new name gets a new inode holding the store file's
 * data, not the store's inode. So no write, truncate, chmod or copy-up
 * through the workspace can ever reach the store, or another workspace
 * that linked the same file. copy_file_range shares the data's extents
 * where the volume can (XFS reflink: metadata only), and copies in the
 * kernel elsewhere; either way no byte crosses FUSE. The kernel takes the
 * new node id: fuse_link accepts any entry of the source's type, and
 * since Linux 5.16 does not count the source's links up itself.
 *
 * The caller must be able to read the store file: it is opened with the
 * caller's fs ids (not its supplementary groups, so a refusal answers
 * EXDEV and the tool copies through the kernel's own checks). Only
 * regular files that nobody has open for writing are cloned; anything
 * else, or a stub (never made in the store), also answers EXDEV, as a
 * link across filesystems would.
 * pf, pp: the source's and the new parent's O_PATH fds. */
static void link_clone(fuse_req_t req, Fs *fs, Inode *i, int pf, Inode *pi, int pp, const char *name) {
    char hex[WSFS_HEX_LEN + 1];
    struct fuse_entry_param e;
    struct stat st;
    int r, err = 0;

    if (i->type != S_IFREG)
        return (void) fuse_reply_err(req, EXDEV);
    /* Open for writing here: the kernel may hold data the backing file
     * has not got yet, which a hard link would share and a copy would not. */
    pthread_mutex_lock(&fs->cas_lock);
    r = i->writers > 0 ? 1 : stub_state(fs, i, hex);
    pthread_mutex_unlock(&fs->cas_lock);
    if (r != 0)
        return (void) fuse_reply_err(req, r > 0 ? EXDEV : -r);
    /* Opened with the caller's ids, so the open itself checks that the
     * caller may read it (through the O_PATH fd's /proc link: the same
     * inode, whatever its name is now). */
    bool sw = creds_enter(fs, req);
    _cleanup_close_ int src = FD_RETRY(&fs->fdc, open(PROC(pf), O_RDONLY | O_CLOEXEC));
    err = errno;
    creds_leave(sw);
    if (src < 0)
        return (void) fuse_reply_err(req, err == EACCES ? EXDEV : err);
    if (fstat(src, &st) < 0)
        return (void) fuse_reply_err(req, errno);

    _cleanup_close_ int dst = -EBADF;
    for (int as_caller = 1; as_caller >= 0; as_caller--) {
        sw = as_caller && creds_enter(fs, req);
        dst = FD_RETRY(&fs->fdc, openat(pp, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                                        st.st_mode & 0777));
        err = dst < 0 ? errno : 0;
        creds_leave(sw);
        if (dst >= 0 && !sw)
            err = set_owner(fs, req, pp, name, false);
        if (dst >= 0 || !sw || (err != EACCES && err != EPERM))
            break;
    }
    if (dst < 0 || err)
        return (void) fuse_reply_err(req, err);
    /* The times a link would show; the data as it is now. */
    struct timespec tv[2] = { st.st_atim, st.st_mtim };
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    bool fresh = now.tv_sec - st.st_mtim.tv_sec < CLONE_SETTLED_S;
    r = st.st_size < CLONE_COPY_MAX && fresh ? copy_small(src, dst, (size_t) st.st_size)
                                              : cas_copy(src, dst, st.st_size);
    if (r >= 0 && futimens(dst, tv) < 0)
        r = negative_errno();
    if (r < 0) {
        (void) unlinkat(pp, name, 0);
        return (void) fuse_reply_err(req, -r);
    }
    dst = safe_close(dst);
    if ((err = do_lookup(fs, pi, name, &e))) {
        (void) unlinkat(pp, name, 0); /* the link failed: no name is left behind */
        return (void) fuse_reply_err(req, err);
    }
    Inode *ni = inode_of(fs, e.ino);
    pthread_mutex_lock(&fs->cas_lock);
    if (ni->stub == STUB_UNKNOWN)
        ni->stub = STUB_NO; /* brand new, and whole */
    pthread_mutex_unlock(&fs->cas_lock);
    atomic_fetch_add(&fs->cfg.stats->store_clones, 1);
    record(fs, ni, true, pi, NULL);
    fuse_reply_entry(req, &e);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent, const char *name) {
    Fs *fs = fs_of(req, OP_LINK);
    Inode *i = inode_of(fs, ino), *pi = inode_of(fs, parent);
    struct fuse_entry_param e;
    int err = reserved(fs, parent, name, EEXIST);
    if (err)
        return (void) fuse_reply_err(req, err);
    /* Nothing is linked into the store: a workspace's inode there could be
     * changed by its owner under every other workspace's feet. */
    if (pi->in_store && !i->in_store)
        return (void) fuse_reply_err(req, EXDEV);
    entry_init(fs, &e);
    e.ino = (uintptr_t) i;
    _cleanup_pin_ Pin pf = pin(fs, i);
    _cleanup_pin_ Pin pp = pin(fs, pi);
    if (pf.fd < 0 || pp.fd < 0)
        return (void) fuse_reply_err(req, pf.fd < 0 ? -pf.fd : -pp.fd);
    if (i->in_store && !pi->in_store)
        return link_clone(req, fs, i, pf.fd, pi, pp.fd, name);
    /* A new name for a stub is a new reference: the sweeper must not be
     * between its walk and its delete (gc.c). AT_EMPTY_PATH links the
     * O_PATH fd's inode itself (we have CAP_DAC_READ_SEARCH). */
    cas_lock_shared(fs->cfg.pool);
    int r = linkat(pf.fd, "", pp.fd, name, AT_EMPTY_PATH);
    err = errno;
    cas_unlock_shared(fs->cfg.pool);
    if (r < 0)
        return (void) fuse_reply_err(req, err);
    if (fstatat(pf.fd, "", &e.attr, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
        return (void) fuse_reply_err(req, errno);
    e.attr_timeout = e.entry_timeout = timeout_of(fs, i);
    inode_ref(&fs->inodes, i);
    record(fs, NULL, false, pi, NULL);
    fuse_reply_entry(req, &e);
}

static void remove_entry(fuse_req_t req, Fs *fs, fuse_ino_t parent, const char *name, int flags) {
    Inode *pi = inode_of(fs, parent);
    int err = reserved(fs, parent, name, EBUSY);
    if (err)
        return (void) fuse_reply_err(req, err);
    _cleanup_pin_ Pin p = pin(fs, pi);
    if (p.fd < 0)
        return (void) fuse_reply_err(req, -p.fd);
    /* Open handles keep their own fds, so an unlinked open file stays
     * readable and writable, as POSIX wants. */
    if (unlinkat(p.fd, name, flags) < 0)
        return (void) fuse_reply_err(req, errno);
    /* It may have been a stub: the pool share counts again when it
     * matters (one store, no lookup of what went). */
    if (!(flags & AT_REMOVEDIR))
        share_note_removed(&fs->share);
    record(fs, NULL, false, pi, NULL);
    fuse_reply_err(req, 0);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name) {
    remove_entry(req, fs_of(req, OP_UNLINK), parent, name, 0);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name) {
    remove_entry(req, fs_of(req, OP_RMDIR), parent, name, AT_REMOVEDIR);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                      const char *newname, unsigned int flags) {
    Fs *fs = fs_of(req, OP_RENAME);
    Inode *pi = inode_of(fs, parent), *npi = inode_of(fs, newparent);
    int err = reserved(fs, parent, name, EBUSY) ?: reserved(fs, newparent, newname, EBUSY);
    if (err)
        return (void) fuse_reply_err(req, err);
    /* Into or out of the store: as across filesystems (tools copy). */
    if (pi->in_store != npi->in_store)
        return (void) fuse_reply_err(req, EXDEV);
    _cleanup_pin_ Pin p = pin(fs, pi);
    if (p.fd < 0)
        return (void) fuse_reply_err(req, -p.fd);
    _cleanup_pin_ Pin np = pin(fs, npi);
    if (np.fd < 0)
        return (void) fuse_reply_err(req, -np.fd);
    /* A rename may move stubs from a directory the sweeper has not read
     * yet into one it has: it must not happen between its walk and its
     * delete (gc.c). */
    cas_lock_shared(fs->cfg.pool);
    int r = renameat2(p.fd, name, np.fd, newname, flags);
    err = errno;
    cas_unlock_shared(fs->cfg.pool);
    if (r < 0)
        return (void) fuse_reply_err(req, err);
    share_note_removed(&fs->share); /* it may have replaced a stub */
    record(fs, NULL, false, pi, npi);
    fuse_reply_err(req, 0);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                      struct fuse_file_info *fi) {
    Fs *fs = fs_of(req, OP_CREATE);
    Inode *pi = inode_of(fs, parent);
    struct fuse_entry_param e;
    Handle *h;
    if (reserved(fs, parent, name, EEXIST))
        return (void) fuse_reply_err(req, EEXIST);

    _cleanup_pin_ Pin p = pin(fs, pi);
    if (p.fd < 0)
        return (void) fuse_reply_err(req, -p.fd);
    int flags = open_flags(fs, fi->flags) | O_CREAT | (fi->flags & O_EXCL);
    int fd = -EBADF, err = 0;
    for (int as_caller = 1; as_caller >= 0; as_caller--) {
        bool sw = as_caller && creds_enter(fs, req);
        fd = FD_RETRY(&fs->fdc, openat(p.fd, name, flags | O_CLOEXEC | O_NOFOLLOW, mode));
        err = fd < 0 ? errno : 0;
        creds_leave(sw);
        if (fd >= 0 && !sw)
            err = set_owner(fs, req, p.fd, name, false);
        if (fd >= 0 || !sw || (err != EACCES && err != EPERM))
            break;
    }
    if (fd < 0)
        return (void) fuse_reply_err(req, err);
    if (err)
        fd = safe_close(fd);
    if (!err)
        err = do_lookup(fs, pi, name, &e);
    if (err) {
        safe_close(fd);
        return (void) fuse_reply_err(req, err);
    }
    Inode *i = inode_of(fs, e.ino);
    pthread_mutex_lock(&fs->cas_lock);
    if (i->stub == STUB_UNKNOWN && (fi->flags & O_EXCL))
        i->stub = STUB_NO; /* brand new */
    pthread_mutex_unlock(&fs->cas_lock);
    int r = open_handle(fs, i, fi->flags, fd, &h);
    if (r < 0) {
        inode_unref(&fs->inodes, &fs->fdc, i, 1);
        return (void) fuse_reply_err(req, -r);
    }
    fi->fh = (uintptr_t) h;
    fi->keep_cache = fs->cfg.keep_cache && !i->in_store;
    atomic_store(&h->recorded, record(fs, i, false, pi, NULL));
    if (fuse_reply_create(req, &e, fi) == -ENOENT) {
        /* Interrupted: no RELEASE will come for it (nor a FORGET). */
        handle_close(fs, i, h, NULL);
        inode_unref(&fs->inodes, &fs->fdc, i, 1);
    }
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    Fs *fs = fs_of(req, OP_OPEN);
    Handle *h;
    int r = open_handle(fs, inode_of(fs, ino), fi->flags, -EBADF, &h);
    if (r < 0)
        return (void) fuse_reply_err(req, -r);
    fi->fh = (uintptr_t) h;
    /* Nothing but us changes the backing files: the kernel's pages of a
     * file stay valid across opens (close-to-open holds, since every
     * change went through this mount; a copy-up keeps the bytes). Without
     * the writeback cache writes go through the pages too. Not so in the
     * store, which other daemons write. */
    fi->keep_cache = fs->cfg.keep_cache && !inode_of(fs, ino)->in_store;
    if (h->writable && (fi->flags & O_TRUNC))
        atomic_store(&h->recorded, record(fs, inode_of(fs, ino), false, NULL, NULL));
    if (fuse_reply_open(req, fi) == -ENOENT) /* interrupted: no RELEASE will come */
        handle_close(fs, inode_of(fs, ino), h, NULL);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
    Fs *fs = fs_of(req, OP_READ);
    Handle *h = (Handle *) (uintptr_t) fi->fh;
    struct fuse_bufvec buf = FUSE_BUFVEC_INIT(size);
    /* After a copy-up (another handle wrote) the object is stale. */
    bool obj = h->obj_fd >= 0 && atomic_load(&inode_of(fs, ino)->copyups) == h->copyups;
    buf.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
    buf.buf[0].fd = obj ? h->obj_fd : h->fd;
    buf.buf[0].pos = off;
    fuse_reply_data(req, &buf, FUSE_BUF_SPLICE_MOVE);
}

static void mark_written(Fs *fs, Handle *h, Inode *i) {
    atomic_store(&i->dirty, true);
    /* One record per file per batch, however many writes it takes. */
    if (atomic_load(&h->recorded) != committer_current(fs->committer))
        atomic_store(&h->recorded, record(fs, i, false, NULL, NULL));
}

static void op_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in, off_t off,
                         struct fuse_file_info *fi) {
    Fs *fs = fs_of(req, OP_WRITE);
    Handle *h = (Handle *) (uintptr_t) fi->fh;
    struct fuse_bufvec out = FUSE_BUFVEC_INIT(fuse_buf_size(in));
    out.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
    out.buf[0].fd = h->fd;
    out.buf[0].pos = off;
    ssize_t n = fuse_buf_copy(&out, in, 0);
    if (n < 0)
        return (void) fuse_reply_err(req, (int) -n);
    mark_written(fs, h, inode_of(fs, ino));
    fuse_reply_write(req, n);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    Fs *fs = fs_of(req, OP_FLUSH);
    /* Nothing to do: the kernel keeps POSIX and flock locks itself (we
     * forward none), the backing filesystem reports nothing at close, and
     * the kernel's own writeback errors (with the writeback cache) reach
     * close(2) without us. This used to close(dup(fd)), where a failed
     * dup (EMFILE) reached the application as EBADF.
     * So by default one ENOSYS, and the kernel sends no more FLUSHes (one
     * request less per close). What close(2) reports does not change:
     * fuse_flush() writes the dirty pages back, waits for them and checks
     * the mapping's errors before it looks at whether FLUSH is wanted. */
    fuse_reply_err(req, fs->cfg.flush ? 0 : ENOSYS);
}

/* Closes a handle; with the last one of a written file, the file may go
 * to the pool (after the reply: nobody waits for that). */
static void handle_close(Fs *fs, Inode *i, Handle *h, fuse_req_t reply_to) {
    pthread_mutex_lock(&fs->cas_lock);
    if (h->prev)
        h->prev->next = h->next;
    else
        fs->handles = h->next;
    if (h->next)
        h->next->prev = h->prev;
    i->opens--;
    if (h->writable)
        i->writers--;
    /* Not from the package store: its files stay whole, so nothing there
     * references the pool (the sweeper never walks it) and a link from it
     * never has to wait for an object. */
    bool store = fs->cfg.cas_threshold > 0 && !i->in_store && i->opens == 0 && atomic_exchange(&i->dirty, false);
    /* The last handle of a stub whose punch waited for it (issue 35.3). */
    bool punch = !store && i->opens == 0 && fs->n_later > 0;
    uint64_t wgen = i->wgen;
    if (store) /* keep the Inode alive past a FORGET while we copy */
        inode_ref(&fs->inodes, i);
    pthread_mutex_unlock(&fs->cas_lock);
    fdcache_charge(&fs->fdc, h->obj_fd >= 0 ? -2 : -1);
    safe_close(h->fd);
    safe_close(h->obj_fd);
    free(h);
    if (reply_to)
        fuse_reply_err(reply_to, 0);
    if (store && i != &fs->inodes.root) {
        stub_store(fs, i, wgen);
        inode_unref(&fs->inodes, &fs->fdc, i, 1);
    }
    if (punch)
        stub_punch_later_retry(fs, &(struct stat) { .st_dev = i->dev, .st_ino = i->ino });
    inode_unref(&fs->inodes, &fs->fdc, i, 1); /* the handle's hold */
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    Fs *fs = fs_of(req, OP_RELEASE);
    handle_close(fs, inode_of(fs, ino), (Handle *) (uintptr_t) fi->fh, req);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi) {
    Fs *fs = fs_of(req, OP_FSYNC);
    int fd = ((Handle *) (uintptr_t) fi->fh)->fd;
    /* Honoured in every commit mode: the application asked for it. With
     * the writeback cache the kernel wrote the dirty pages back first. */
    atomic_fetch_add(&fs->cfg.stats->app_fsyncs, 1);
    int r = datasync ? fdatasync(fd) : fsync(fd);
    fuse_reply_err(req, r < 0 ? errno : 0);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    Fs *fs = fs_of(req, OP_OPENDIR);
    Inode *i = inode_of(fs, ino);
    _cleanup_free_ DirHandle *d = calloc(1, sizeof(DirHandle));
    if (!d)
        return (void) fuse_reply_err(req, ENOMEM);
    int fd = i == &fs->inodes.root || i->fh.len == 0
                     ? FD_RETRY(&fs->fdc, openat(i->slot.fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC))
                     : FD_RETRY(&fs->fdc, file_handle_open(&fs->mounts, &i->fh, O_RDONLY | O_DIRECTORY));
    if (fd < 0)
        return (void) fuse_reply_err(req, i == &fs->inodes.root || i->fh.len == 0 ? errno : -fd);
    if (!(d->dp = fdopendir(fd))) {
        int err = errno;
        safe_close(fd);
        return (void) fuse_reply_err(req, err);
    }
    fdcache_charge(&fs->fdc, 1);
    pthread_mutex_lock(&fs->dirs_lock);
    d->next = fs->dirs;
    if (d->next)
        d->next->prev = d;
    fs->dirs = d;
    pthread_mutex_unlock(&fs->dirs_lock);
    fi->fh = (uintptr_t) TAKE_PTR(d);
    /* Outside the package store every change of a directory's entries
     * comes through this mount (the daemon changes the state dir only
     * while serving a request for that directory), and the kernel drops
     * a directory's cached listing at each change it makes there
     * (fuse_dir_changed) or when its mtime moves. So such a listing can
     * be kept across opens: a second `git status` reads no directory
     * again. The store's directories are changed by other workspaces'
     * daemons too, behind this kernel: their listings are never kept,
     * as their files' pages are not (op_open). */
    bool cache = fs->cfg.cache_dirs && !i->in_store;
    fi->cache_readdir = cache;
    fi->keep_cache = cache;
    fuse_reply_open(req, fi);
}

static void do_readdir(fuse_req_t req, Fs *fs, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi,
                       bool plus) {
    DirHandle *d = (DirHandle *) (uintptr_t) fi->fh;
    _cleanup_free_ char *buf = calloc(1, size);
    size_t rem = size;
    int err = 0;

    if (!buf)
        return (void) fuse_reply_err(req, ENOMEM);
    if (off != d->offset) {
        seekdir(d->dp, off);
        d->entry = NULL;
        d->offset = off;
    }
    for (;;) {
        if (!d->entry) {
            errno = 0;
            d->entry = readdir(d->dp);
            if (!d->entry) {
                err = errno;
                break;
            }
        }
        const char *name = d->entry->d_name;
        off_t next = d->entry->d_off;
        size_t n;
        if (is_store_name(fs, inode_of(fs, ino), name)) { /* shadowed by the store, which is not listed */
            d->entry = NULL;
            d->offset = next;
            continue;
        }
        if (plus) {
            struct fuse_entry_param e = {
                .attr.st_ino = d->entry->d_ino,
                .attr.st_mode = d->entry->d_type << 12,
            };
            bool dots = streq(name, ".") || streq(name, "..");
            if (!dots && (err = do_lookup(fs, inode_of(fs, ino), name, &e))) {
                if (err == ENOENT) { /* removed meanwhile: skip it */
                    err = 0;
                    d->entry = NULL;
                    d->offset = next;
                    continue;
                }
                break;
            }
            n = fuse_add_direntry_plus(req, buf + size - rem, rem, name, &e, next);
            if (n > rem && !dots) /* did not fit: undo the lookup count */
                inode_unref(&fs->inodes, &fs->fdc, inode_of(fs, e.ino), 1);
        } else {
            struct stat st = { .st_ino = d->entry->d_ino, .st_mode = d->entry->d_type << 12 };
            n = fuse_add_direntry(req, buf + size - rem, rem, name, &st, next);
        }
        if (n > rem)
            break;
        rem -= n;
        d->entry = NULL;
        d->offset = next;
    }
    /* An error after some entries: return those (their lookups counted). */
    if (err && rem == size)
        fuse_reply_err(req, err);
    else
        fuse_reply_buf(req, buf, size - rem);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
    do_readdir(req, fs_of(req, OP_READDIR), ino, size, off, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
    do_readdir(req, fs_of(req, OP_READDIRPLUS), ino, size, off, fi, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    Fs *fs = fs_of(req, OP_RELEASEDIR);
    DirHandle *d = (DirHandle *) (uintptr_t) fi->fh;
    pthread_mutex_lock(&fs->dirs_lock);
    if (d->prev)
        d->prev->next = d->next;
    else
        fs->dirs = d->next;
    if (d->next)
        d->next->prev = d->prev;
    pthread_mutex_unlock(&fs->dirs_lock);
    closedir(d->dp);
    free(d);
    fdcache_charge(&fs->fdc, -1);
    fuse_reply_err(req, 0);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi) {
    Fs *fs = fs_of(req, OP_FSYNCDIR);
    int fd = dirfd(((DirHandle *) (uintptr_t) fi->fh)->dp);
    atomic_fetch_add(&fs->cfg.stats->app_fsyncs, 1);
    int r = datasync ? fdatasync(fd) : fsync(fd);
    fuse_reply_err(req, r < 0 ? errno : 0);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino) {
    Fs *fs = fs_of(req, OP_STATFS);
    struct statvfs sv;
    /* Always the state dir's filesystem: that is where the space goes. */
    if (fstatvfs(fs->inodes.root.slot.fd, &sv) < 0)
        return (void) fuse_reply_err(req, errno);
    fuse_reply_statfs(req, &sv);
}

static void op_access(fuse_req_t req, fuse_ino_t ino, int mask) {
    Fs *fs = fs_of(req, OP_ACCESS);
    /* Only reached without default_permissions; checks what the backing
     * file allows the daemon. */
    _cleanup_pin_ Pin p = pin(fs, inode_of(fs, ino));
    if (p.fd < 0)
        return (void) fuse_reply_err(req, -p.fd);
    int r = faccessat(AT_FDCWD, PROC(p.fd), mask, 0);
    fuse_reply_err(req, r < 0 ? errno : 0);
}

/* Extended attributes, when enabled (--xattrs): passed through, except
 * our own user.wsfs.* (the CAS reference), which the mount does not show
 * and does not let anyone set. Off by default: with getxattr answered,
 * the kernel asks for security.capability on every write(2). Off, the
 * kernel answers EOPNOTSUPP itself after our first ENOSYS. */
static bool ours(const char *name) {
    return strncmp(name, WSFS_XATTR_PREFIX, strlen(WSFS_XATTR_PREFIX)) == 0;
}

static int xattr_pin(fuse_req_t req, Fs *fs, fuse_ino_t ino, Pin *ret) {
    if (!fs->cfg.xattrs)
        return ENOSYS;
    Inode *i = inode_of(fs, ino);
    /* /proc/self/fd of an O_PATH symlink fd cannot reach the link itself;
     * Linux refuses user xattrs on symlinks anyway. */
    if (i->type == S_IFLNK)
        return EPERM;
    *ret = pin(fs, i);
    return ret->fd < 0 ? -ret->fd : 0;
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size) {
    Fs *fs = fs_of(req, OP_GETXATTR);
    _cleanup_pin_ Pin p = { .fd = -EBADF };
    int err = xattr_pin(req, fs, ino, &p);
    if (err)
        return (void) fuse_reply_err(req, err);
    if (ours(name))
        return (void) fuse_reply_err(req, ENODATA);
    _cleanup_free_ char *buf = size > 0 ? malloc(size) : NULL;
    if (size > 0 && !buf)
        return (void) fuse_reply_err(req, ENOMEM);
    ssize_t n = getxattr(PROC(p.fd), name, buf, size);
    if (n < 0)
        return (void) fuse_reply_err(req, errno);
    if (size == 0)
        fuse_reply_xattr(req, n);
    else
        fuse_reply_buf(req, buf, n);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
    Fs *fs = fs_of(req, OP_LISTXATTR);
    _cleanup_pin_ Pin p = { .fd = -EBADF };
    int err = xattr_pin(req, fs, ino, &p);
    if (err)
        return (void) fuse_reply_err(req, err);
    ssize_t n = listxattr(PROC(p.fd), NULL, 0);
    if (n < 0)
        return (void) fuse_reply_err(req, errno);
    _cleanup_free_ char *all = malloc(n + 1), *out = malloc(n + 1);
    if (!all || !out)
        return (void) fuse_reply_err(req, ENOMEM);
    if ((n = listxattr(PROC(p.fd), all, n)) < 0)
        return (void) fuse_reply_err(req, errno);
    size_t m = 0;
    for (char *s = all; s < all + n; s += strlen(s) + 1)
        if (!ours(s)) {
            size_t l = strlen(s) + 1;
            memcpy(out + m, s, l);
            m += l;
        }
    if (size == 0)
        fuse_reply_xattr(req, m);
    else if (size < m)
        fuse_reply_err(req, ERANGE);
    else
        fuse_reply_buf(req, out, m);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
                        int flags) {
    Fs *fs = fs_of(req, OP_SETXATTR);
    _cleanup_pin_ Pin p = { .fd = -EBADF };
    int err = xattr_pin(req, fs, ino, &p);
    if (err)
        return (void) fuse_reply_err(req, err);
    if (ours(name))
        return (void) fuse_reply_err(req, EPERM);
    if (setxattr(PROC(p.fd), name, value, size, flags) < 0)
        return (void) fuse_reply_err(req, errno);
    record(fs, inode_of(fs, ino), true, NULL, NULL);
    fuse_reply_err(req, 0);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name) {
    Fs *fs = fs_of(req, OP_REMOVEXATTR);
    _cleanup_pin_ Pin p = { .fd = -EBADF };
    int err = xattr_pin(req, fs, ino, &p);
    if (err)
        return (void) fuse_reply_err(req, err);
    if (ours(name))
        return (void) fuse_reply_err(req, ENODATA);
    if (removexattr(PROC(p.fd), name) < 0)
        return (void) fuse_reply_err(req, errno);
    record(fs, inode_of(fs, ino), true, NULL, NULL);
    fuse_reply_err(req, 0);
}

static void op_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in, struct fuse_file_info *fi_in,
                               fuse_ino_t ino_out, off_t off_out, struct fuse_file_info *fi_out, size_t len,
                               int flags) {
    Fs *fs = fs_of(req, OP_COPY_FILE_RANGE);
    Handle *hi = (Handle *) (uintptr_t) fi_in->fh, *ho = (Handle *) (uintptr_t) fi_out->fh;
    bool obj = hi->obj_fd >= 0 && atomic_load(&inode_of(fs, ino_in)->copyups) == hi->copyups;
    int in = obj ? hi->obj_fd : hi->fd;
    loff_t oi = off_in, oo = off_out;
    /* In the state fs the kernel may share extents (XFS reflink); from an
     * object on another fs it refuses: then one bounded chunk by hand
     * (the caller loops on short copies). */
    ssize_t n = copy_file_range(in, &oi, ho->fd, &oo, len, 0);
    if (n < 0 && (errno == EXDEV || errno == EOPNOTSUPP || errno == EINVAL)) {
        size_t chunk = MIN(len, (size_t) 1024 * 1024);
        _cleanup_free_ char *buf = malloc(chunk);
        if (!buf)
            return (void) fuse_reply_err(req, ENOMEM);
        n = pread(in, buf, chunk, off_in);
        if (n > 0)
            n = pwrite(ho->fd, buf, n, off_out);
    }
    if (n < 0)
        return (void) fuse_reply_err(req, errno);
    mark_written(fs, ho, inode_of(fs, ino_out));
    fuse_reply_write(req, n);
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len, struct fuse_file_info *fi) {
    Fs *fs = fs_of(req, OP_FALLOCATE);
    Handle *h = (Handle *) (uintptr_t) fi->fh;
    if (fallocate(h->fd, mode, off, len) < 0)
        return (void) fuse_reply_err(req, errno);
    mark_written(fs, h, inode_of(fs, ino));
    fuse_reply_err(req, 0);
}

const struct fuse_lowlevel_ops fs_ops = {
    .init = op_init,
    .lookup = op_lookup,
    .forget = op_forget,
    .forget_multi = op_forget_multi,
    .getattr = op_getattr,
    .setattr = op_setattr,
    .readlink = op_readlink,
    .mknod = op_mknod,
    .mkdir = op_mkdir,
    .symlink = op_symlink,
    .link = op_link,
    .unlink = op_unlink,
    .rmdir = op_rmdir,
    .rename = op_rename,
    .create = op_create,
    .open = op_open,
    .read = op_read,
    .write_buf = op_write_buf,
    .flush = op_flush,
    .release = op_release,
    .fsync = op_fsync,
    .opendir = op_opendir,
    .readdir = op_readdir,
    .readdirplus = op_readdirplus,
    .releasedir = op_releasedir,
    .fsyncdir = op_fsyncdir,
    .statfs = op_statfs,
    .access = op_access,
    .getxattr = op_getxattr,
    .setxattr = op_setxattr,
    .listxattr = op_listxattr,
    .removexattr = op_removexattr,
    .copy_file_range = op_copy_file_range,
    .fallocate = op_fallocate,
};

int fs_new(const FsConfig *cfg, Fs **ret) {
    _cleanup_free_ Fs *fs = calloc(1, sizeof(Fs));
    int r;
    if (!fs)
        return -ENOMEM;
    fs->cfg = *cfg;
    mount_table_init(&fs->mounts);
    /* Each operation pins at most three inodes (rename: two parents; a
     * lookup inside: the parent again): the floor. The bound also covers
     * the fds an operation holds for a moment outside the cache (a
     * lookup's fd before it is offered; a publish's source, copy, object
     * and directory; the committer's reopen and stats file; the pool-share
     * walker's directory): reserved. */
    size_t threads = MAX(cfg->threads, 1u), floor = 4 * threads + 8, transient = 4 * (threads + 1) + 3;
    size_t cap = cfg->fd_cache > floor + transient ? cfg->fd_cache - transient : floor;
    fdcache_init(&fs->fdc, cap, floor, cfg->stats, inode_release);
    if ((r = inode_table_init(&fs->inodes, &fs->mounts, cfg->root_fd, cfg->stats)) < 0) {
        fdcache_done(&fs->fdc);
        mount_table_done(&fs->mounts);
        return r;
    }
    /* The content shards' mounts: objects are named by handle in
     * fdatasync batches (a mount without handles makes those syncfs). */
    for (size_t k = 0; k < cfg->pool->n_shards; k++)
        (void) mount_table_add(&fs->mounts, cfg->pool->objects_fds[k]);
    pthread_mutex_init(&fs->cas_lock, NULL);
    pthread_mutex_init(&fs->log_lock, NULL);
    pthread_mutex_init(&fs->dirs_lock, NULL);
    fs->euid = geteuid();
    if ((r = share_init(&fs->share, cfg->pool, cfg->root_fd, cfg->pool_share, cfg->stats)) < 0) {
        share_done(&fs->share);
        pthread_mutex_destroy(&fs->cas_lock);
        pthread_mutex_destroy(&fs->log_lock);
        pthread_mutex_destroy(&fs->dirs_lock);
        inode_table_done(&fs->inodes, &fs->fdc);
        fdcache_done(&fs->fdc);
        mount_table_done(&fs->mounts);
        return r;
    }
    *ret = TAKE_PTR(fs);
    return 0;
}

void fs_set_session(Fs *fs, struct fuse_session *se) {
    fs->se = se;
}

static void write_stats(void *userdata) {
    committer_stats_changed(userdata);
}

/* A pool-share walk (at start, or a recount) found a stub still whole (stub.c). */
static void found_whole(void *ctx, int dir_fd, const char *name, const char *hex) {
    stub_punch_found_whole(ctx, dir_fd, name, hex);
}

void fs_set_committer(Fs *fs, Committer *c) {
    fs->committer = c;
    share_on_whole(&fs->share, found_whole, fs);
    share_start(&fs->share, write_stats, c);
}

void fs_stop_walker(Fs *fs) {
    if (fs)
        share_stop(&fs->share);
}

void fs_free(Fs *fs) {
    if (!fs)
        return;
    share_done(&fs->share);
    for (Handle *h = fs->handles, *n; h; h = n) {
        n = h->next;
        safe_close(h->fd);
        safe_close(h->obj_fd);
        free(h);
    }
    for (DirHandle *d = fs->dirs, *n; d; d = n) {
        n = d->next;
        closedir(d->dp);
        free(d);
    }
    inode_table_done(&fs->inodes, &fs->fdc);
    safe_close(fs->cfg.store_fd);
    fdcache_done(&fs->fdc);
    mount_table_done(&fs->mounts);
    free(fs->later);
    pthread_mutex_destroy(&fs->cas_lock);
    pthread_mutex_destroy(&fs->log_lock);
    pthread_mutex_destroy(&fs->dirs_lock);
    free(fs);
}
