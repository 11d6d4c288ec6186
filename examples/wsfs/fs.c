/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The FUSE low-level operations over the state directory. As in libfuse's
 * passthrough_ll.c, a FUSE inode is an Inode holding an O_PATH fd of the
 * backing file, found again by (st_dev, st_ino) so hard links share one
 * Inode; the kernel's lookup count (nlookup) keeps it alive until FORGET.
 *
 * CAS. When the last handle of a file that was written closes and the
 * file is at least cas_threshold bytes, its content is published to the
 * pool (cas.c) and the backing file becomes a stub: xattr user.wsfs.cas =
 * digest. The stub keeps its size, mode and times; its data blocks are
 * punched out (fallocate PUNCH_HOLE|KEEP_SIZE) only after the batch that
 * made the object durable committed. Hence the invariant every crash
 * relies on: a stub whose object is missing still holds its own data.
 * Reads of a stub are served from the object; opening it for writing, or
 * truncating it, first copies the object back (copy-up).
 *
 * Locks: table_lock guards the inode tree and nlookup; cas_lock guards
 * the open/writer counts and every CAS transition (copy-up, stub
 * conversion, punch). Order: cas_lock, then table_lock.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <search.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>

#include "wsfs.h"

typedef struct Inode {
    int fd;                       /* O_PATH | O_NOFOLLOW */
    dev_t dev;
    ino_t ino;
    uint64_t nlookup;             /* table_lock */
    unsigned opens, writers;      /* cas_lock */
    uint64_t wgen;                /* cas_lock: bumped by opens for writing, truncates */
    atomic_bool dirty;            /* written since the last CAS attempt */
    atomic_uint_fast64_t copyups; /* bumped by each copy-up */
} Inode;

typedef struct Handle Handle;
struct Handle {
    Handle *prev, *next;           /* Fs.handles, cas_lock */
    int fd;                        /* the backing file */
    int obj_fd;                    /* the CAS object serving reads, or -EBADF */
    uint64_t copyups;              /* Inode.copyups when obj_fd was opened */
    bool writable;
    atomic_uint_fast64_t recorded; /* the batch this handle's writes last joined */
};

typedef struct DirHandle {
    DIR *dp;
    struct dirent *entry;
    off_t offset;
} DirHandle;

struct Fs {
    FsConfig cfg;
    Inode root;
    void *table;
    Handle *handles;   /* open at unmount: the kernel drops pending RELEASEs */
    pthread_mutex_t table_lock, cas_lock;
    Committer *committer;
    uid_t euid;
    double timeout;
};

static Fs *fs_of(fuse_req_t req) {
    Fs *fs = fuse_req_userdata(req);
    atomic_fetch_add(&fs->cfg.stats->operations, 1);
    return fs;
}

static Inode *inode_of(Fs *fs, fuse_ino_t ino) {
    return ino == FUSE_ROOT_ID ? &fs->root : (Inode *) (uintptr_t) ino;
}

#define PROC(fd) ({ char *_p = alloca(32); snprintf(_p, 32, "/proc/self/fd/%d", (fd)); _p; })

static int inode_cmp(const void *a, const void *b) {
    const Inode *x = a, *y = b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static void inode_unref(Fs *fs, Inode *i, uint64_t n) {
    if (i == &fs->root)
        return;
    pthread_mutex_lock(&fs->table_lock);
    i->nlookup -= MIN(n, i->nlookup);
    bool gone = i->nlookup == 0;
    if (gone)
        tdelete(i, &fs->table, inode_cmp);
    pthread_mutex_unlock(&fs->table_lock);
    if (gone) {
        safe_close(i->fd);
        free(i);
    }
}

/* One record for the group commit: a file whose data changed (full: also
 * its metadata) and up to two directories whose entries changed. */
static uint64_t record(Fs *fs, Inode *file, bool full, Inode *dir1, Inode *dir2) {
    CommitItem items[3];
    size_t n = 0;
    if (file)
        items[n++] = (CommitItem) { file->dev, file->ino, file->fd, full };
    if (dir1)
        items[n++] = (CommitItem) { dir1->dev, dir1->ino, dir1->fd, true };
    if (dir2 && dir2 != dir1)
        items[n++] = (CommitItem) { dir2->dev, dir2->ino, dir2->fd, true };
    return committer_add(fs->committer, items, n, -1, NULL);
}

static int do_lookup(Fs *fs, Inode *parent, const char *name, struct fuse_entry_param *e) {
    *e = (struct fuse_entry_param) { .attr_timeout = fs->timeout, .entry_timeout = fs->timeout };
    _cleanup_close_ int fd = openat(parent->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fstatat(fd, "", &e->attr, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
        return errno;

    Inode key = { .dev = e->attr.st_dev, .ino = e->attr.st_ino }, *i;
    pthread_mutex_lock(&fs->table_lock);
    Inode **slot = tsearch(&key, &fs->table, inode_cmp);
    if (slot && *slot == &key) {
        i = calloc(1, sizeof(Inode));
        if (!i)
            tdelete(&key, &fs->table, inode_cmp);
        else {
            *i = key;
            i->fd = TAKE_FD(fd);
            *slot = i;
        }
    } else
        i = slot ? *slot : NULL;
    if (i)
        i->nlookup++;
    pthread_mutex_unlock(&fs->table_lock);
    if (!i)
        return ENOMEM;
    e->ino = (uintptr_t) i;
    return 0;
}

/* Runs as root for many users: new entries belong to the caller (and keep
 * the group of a setgid parent), as on a local filesystem. */
static void set_owner(Fs *fs, fuse_req_t req, Inode *parent, const char *name) {
    const struct fuse_ctx *ctx = fuse_req_ctx(req);
    struct stat pst;
    if (fs->euid != 0 || (ctx->uid == 0 && ctx->gid == 0))
        return;
    gid_t gid = fstatat(parent->fd, "", &pst, AT_EMPTY_PATH) == 0 && (pst.st_mode & S_ISGID) ? (gid_t) -1 : ctx->gid;
    (void) fchownat(parent->fd, name, ctx->uid, gid, AT_SYMLINK_NOFOLLOW);
}

/* Copies a stub's object back into the stub, sized new_size (UINT64_MAX:
 * keep the size), and makes it an ordinary file. cas_lock held. */
static int copy_up(Fs *fs, Inode *i, const char *hex, uint64_t new_size) {
    struct stat st;
    int r;
    _cleanup_close_ int fd = open(PROC(i->fd), O_RDWR | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0)
        return negative_errno();
    if (new_size == UINT64_MAX)
        new_size = st.st_size;
    _cleanup_close_ int obj = cas_open_object(fs->cfg.pool, hex);
    if (obj < 0 && obj != -ENOENT)
        return obj;
    /* No object: then the stub was never punched and holds the data. */
    if (obj >= 0 && (r = cas_copy(obj, fd, MIN((uint64_t) st.st_size, new_size))) < 0)
        return r;
    if (new_size != (uint64_t) st.st_size && ftruncate(fd, new_size) < 0)
        return negative_errno();
    /* The data must be on disk before the xattr goes, or a crash leaves
     * an ordinary file full of holes. */
    if (fs->cfg.mode != COMMIT_NONE && fdatasync(fd) < 0)
        return negative_errno();
    if (fremovexattr(fd, WSFS_XATTR_CAS) < 0)
        return negative_errno();
    /* Copying moved the data, it did not change it: keep the times that
     * make and git look at. */
    (void) futimens(fd, (struct timespec[2]) { st.st_atim, st.st_mtim });
    atomic_fetch_add(&i->copyups, 1);
    atomic_fetch_add(&fs->cfg.stats->copy_ups, 1);
    return 0;
}

/* cas_lock held. */
static int truncate_locked(Fs *fs, Inode *i, uint64_t size) {
    char hex[WSFS_HEX_LEN + 1];
    int r = cas_stub_digest(i->fd, hex);
    if (r < 0)
        return r;
    r = r > 0 ? copy_up(fs, i, hex, size) : truncate(PROC(i->fd), size) < 0 ? negative_errno() : 0;
    if (r >= 0) {
        i->wgen++;
        atomic_store(&i->dirty, true);
    }
    return r;
}

/* Makes a released, written file a stub if it is large enough. Runs with
 * no lock held (hashing takes a while); it gives up if a writer came. */
static void store_object(Fs *fs, Inode *i, uint64_t wgen) {
    char hex[WSFS_HEX_LEN + 1];
    struct stat st, ost, dst;
    size_t shard;
    int obj = -EBADF, dir = -EBADF;

    _cleanup_close_ int fd = open(PROC(i->fd), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink == 0 ||
        (uint64_t) st.st_size < fs->cfg.cas_threshold)
        return;
    int r = cas_publish(fs->cfg.pool, fd, hex, &obj, &dir, &shard);
    if (r < 0) {
        atomic_fetch_add(&fs->cfg.stats->cas_errors, 1);
        if (r != -EAGAIN) /* EAGAIN: changed while hashed; its writer retries */
            fprintf(stderr, "layoutd-wsfs: storing object failed: %s, keeping the file\n", strerror(-r));
        return;
    }
    atomic_fetch_add(r > 0 ? &fs->cfg.stats->objects_deduplicated : &fs->cfg.stats->objects_stored, 1);

    pthread_mutex_lock(&fs->cas_lock);
    bool ok = i->wgen == wgen && i->writers == 0;
    if (ok && fsetxattr(fd, WSFS_XATTR_CAS, hex, WSFS_HEX_LEN, 0) < 0) {
        fprintf(stderr, "layoutd-wsfs: setting %s failed: %m\n", WSFS_XATTR_CAS);
        atomic_fetch_add(&fs->cfg.stats->cas_errors, 1);
        ok = false;
    }
    pthread_mutex_unlock(&fs->cas_lock);

    if (ok && fstat(obj, &ost) == 0 && fstat(dir, &dst) == 0) {
        CommitItem items[] = {
            { st.st_dev, st.st_ino, i->fd, true }, /* the xattr must be durable */
            { ost.st_dev, ost.st_ino, obj, false },
            { dst.st_dev, dst.st_ino, dir, true },
        };
        CasPunch p = { .dev = st.st_dev, .ino = st.st_ino, .fd = i->fd };
        memcpy(p.hex, hex, sizeof(hex));
        committer_add(fs->committer, items, ELEMENTSOF(items), shard, &p);
    }
    safe_close(obj);
    safe_close(dir);
}

void fs_punch(void *userdata, const CasPunch *p) {
    Fs *fs = userdata;
    Inode key = { .dev = p->dev, .ino = p->ino };
    char hex[WSFS_HEX_LEN + 1];
    struct stat st;

    pthread_mutex_lock(&fs->cas_lock);
    pthread_mutex_lock(&fs->table_lock);
    Inode **slot = tfind(&key, &fs->table, inode_cmp);
    unsigned opens = slot ? (*slot)->opens : 0;
    pthread_mutex_unlock(&fs->table_lock);
    /* Open handles may read the stub's own data; a copy-up since then
     * removed the xattr. Either way the data stays. */
    if (opens == 0 && cas_stub_digest(p->fd, hex) > 0 && streq(hex, p->hex)) {
        _cleanup_close_ int fd = open(PROC(p->fd), O_RDWR | O_CLOEXEC);
        if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0 &&
            fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, st.st_size) == 0) {
            (void) futimens(fd, (struct timespec[2]) { st.st_atim, st.st_mtim });
            atomic_fetch_add(&fs->cfg.stats->stubs_punched, 1);
        }
    }
    pthread_mutex_unlock(&fs->cas_lock);
}

static int open_handle(Fs *fs, Inode *i, int flags, int fd, Handle **ret) {
    _cleanup_close_ int owned = fd;
    bool writable = (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
    char hex[WSFS_HEX_LEN + 1];
    _cleanup_free_ Handle *h = calloc(1, sizeof(Handle));
    if (!h)
        return -ENOMEM;
    h->obj_fd = -EBADF;
    h->writable = writable;

    pthread_mutex_lock(&fs->cas_lock);
    int r = cas_stub_digest(i->fd, hex);
    if (r > 0 && writable)
        r = copy_up(fs, i, hex, (flags & O_TRUNC) ? 0 : UINT64_MAX);
    if (r >= 0 && owned < 0) {
        owned = open(PROC(i->fd), (flags & ~(O_NOFOLLOW | O_CREAT | O_EXCL)) | O_CLOEXEC);
        if (owned < 0)
            r = negative_errno();
    }
    if (r > 0 && !writable) {
        h->obj_fd = cas_open_object(fs->cfg.pool, hex);
        h->copyups = atomic_load(&i->copyups);
        if (h->obj_fd == -ENOENT) {
            /* A crash before the object was durable: the stub still has
             * the data (it is punched only after), so it stops being one. */
            fprintf(stderr, "layoutd-wsfs: object %s missing, using the stub's own data\n", hex);
            (void) removexattr(PROC(i->fd), WSFS_XATTR_CAS);
        } else if (h->obj_fd < 0)
            r = h->obj_fd;
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
    h->fd = TAKE_FD(owned);
    *ret = TAKE_PTR(h);
    return 0;
}

static void op_init(void *userdata, struct fuse_conn_info *conn) {
    /* O_TRUNC arrives with the open, so a stub opened with O_TRUNC is not
     * copied up only to be truncated. */
    if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
        conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name) {
    Fs *fs = fs_of(req);
    struct fuse_entry_param e;
    int err = do_lookup(fs, inode_of(fs, parent), name, &e);
    if (err)
        fuse_reply_err(req, err);
    else
        fuse_reply_entry(req, &e);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
    Fs *fs = fs_of(req);
    inode_unref(fs, inode_of(fs, ino), nlookup);
    fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets) {
    Fs *fs = fs_of(req);
    for (size_t k = 0; k < count; k++)
        inode_unref(fs, inode_of(fs, forgets[k].ino), forgets[k].nlookup);
    fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    Fs *fs = fs_of(req);
    struct stat st;
    if (fstatat(inode_of(fs, ino)->fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
        return (void) fuse_reply_err(req, errno);
    fuse_reply_attr(req, &st, fs->timeout);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int valid, struct fuse_file_info *fi) {
    Fs *fs = fs_of(req);
    Inode *i = inode_of(fs, ino);
    struct stat st;
    int r = 0;

    pthread_mutex_lock(&fs->cas_lock);
    if (valid & FUSE_SET_ATTR_MODE)
        r = chmod(PROC(i->fd), attr->st_mode) < 0 ? negative_errno() : 0;
    if (r >= 0 && (valid & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID))) {
        uid_t uid = (valid & FUSE_SET_ATTR_UID) ? attr->st_uid : (uid_t) -1;
        gid_t gid = (valid & FUSE_SET_ATTR_GID) ? attr->st_gid : (gid_t) -1;
        r = fchownat(i->fd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0 ? negative_errno() : 0;
    }
    if (r >= 0 && (valid & FUSE_SET_ATTR_SIZE))
        r = truncate_locked(fs, i, attr->st_size);
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
        r = utimensat(AT_FDCWD, PROC(i->fd), tv, 0) < 0 ? negative_errno() : 0;
    }
    pthread_mutex_unlock(&fs->cas_lock);
    if (r < 0)
        return (void) fuse_reply_err(req, -r);
    if (fstatat(i->fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
        return (void) fuse_reply_err(req, errno);
    if (!S_ISLNK(st.st_mode)) /* a symlink cannot be opened to be synced */
        record(fs, i, true, NULL, NULL);
    fuse_reply_attr(req, &st, fs->timeout);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino) {
    Fs *fs = fs_of(req);
    char buf[PATH_MAX + 1];
    ssize_t n = readlinkat(inode_of(fs, ino)->fd, "", buf, sizeof(buf));
    if (n < 0)
        return (void) fuse_reply_err(req, errno);
    if (n == sizeof(buf))
        return (void) fuse_reply_err(req, ENAMETOOLONG);
    buf[n] = 0;
    fuse_reply_readlink(req, buf);
}

static void make_node(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev,
                      const char *link) {
    Fs *fs = fs_of(req);
    Inode *p = inode_of(fs, parent);
    struct fuse_entry_param e;
    int r = link ? symlinkat(link, p->fd, name)
            : S_ISDIR(mode) ? mkdirat(p->fd, name, mode)
                            : mknodat(p->fd, name, mode, rdev);
    if (r < 0)
        return (void) fuse_reply_err(req, errno);
    set_owner(fs, req, p, name);
    int err = do_lookup(fs, p, name, &e);
    if (err)
        return (void) fuse_reply_err(req, err);
    record(fs, NULL, false, p, NULL);
    fuse_reply_entry(req, &e);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev) {
    make_node(req, parent, name, mode, rdev, NULL);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode) {
    make_node(req, parent, name, S_IFDIR | mode, 0, NULL);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name) {
    make_node(req, parent, name, S_IFLNK, 0, link);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent, const char *name) {
    Fs *fs = fs_of(req);
    Inode *i = inode_of(fs, ino), *p = inode_of(fs, parent);
    struct fuse_entry_param e = { .ino = (uintptr_t) i, .attr_timeout = fs->timeout, .entry_timeout = fs->timeout };
    /* AT_SYMLINK_FOLLOW resolves the /proc magic link to the inode itself. */
    if (linkat(AT_FDCWD, PROC(i->fd), p->fd, name, AT_SYMLINK_FOLLOW) < 0 ||
        fstatat(i->fd, "", &e.attr, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
        return (void) fuse_reply_err(req, errno);
    pthread_mutex_lock(&fs->table_lock);
    i->nlookup++;
    pthread_mutex_unlock(&fs->table_lock);
    record(fs, NULL, false, p, NULL);
    fuse_reply_entry(req, &e);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name) {
    Fs *fs = fs_of(req);
    Inode *p = inode_of(fs, parent);
    /* Open handles keep their own fds, so an unlinked open file stays
     * readable and writable, as POSIX wants. */
    if (unlinkat(p->fd, name, 0) < 0)
        return (void) fuse_reply_err(req, errno);
    record(fs, NULL, false, p, NULL);
    fuse_reply_err(req, 0);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name) {
    Fs *fs = fs_of(req);
    Inode *p = inode_of(fs, parent);
    if (unlinkat(p->fd, name, AT_REMOVEDIR) < 0)
        return (void) fuse_reply_err(req, errno);
    record(fs, NULL, false, p, NULL);
    fuse_reply_err(req, 0);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                      const char *newname, unsigned int flags) {
    Fs *fs = fs_of(req);
    Inode *p = inode_of(fs, parent), *np = inode_of(fs, newparent);
    if (renameat2(p->fd, name, np->fd, newname, flags) < 0)
        return (void) fuse_reply_err(req, errno);
    record(fs, NULL, false, p, np);
    fuse_reply_err(req, 0);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                      struct fuse_file_info *fi) {
    Fs *fs = fs_of(req);
    Inode *p = inode_of(fs, parent);
    struct fuse_entry_param e;
    Handle *h;

    int fd = openat(p->fd, name, ((fi->flags | O_CREAT) & ~O_NOFOLLOW) | O_CLOEXEC, mode);
    if (fd < 0)
        return (void) fuse_reply_err(req, errno);
    set_owner(fs, req, p, name);
    int err = do_lookup(fs, p, name, &e);
    if (err) {
        safe_close(fd);
        return (void) fuse_reply_err(req, err);
    }
    int r = open_handle(fs, inode_of(fs, e.ino), fi->flags, fd, &h);
    if (r < 0) {
        inode_unref(fs, inode_of(fs, e.ino), 1);
        return (void) fuse_reply_err(req, -r);
    }
    fi->fh = (uintptr_t) h;
    atomic_store(&h->recorded, record(fs, inode_of(fs, e.ino), false, p, NULL));
    fuse_reply_create(req, &e, fi);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    Fs *fs = fs_of(req);
    Handle *h;
    int r = open_handle(fs, inode_of(fs, ino), fi->flags, -EBADF, &h);
    if (r < 0)
        return (void) fuse_reply_err(req, -r);
    fi->fh = (uintptr_t) h;
    if (h->writable && (fi->flags & O_TRUNC))
        atomic_store(&h->recorded, record(fs, inode_of(fs, ino), false, NULL, NULL));
    fuse_reply_open(req, fi);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
    Fs *fs = fs_of(req);
    Handle *h = (Handle *) (uintptr_t) fi->fh;
    struct fuse_bufvec buf = FUSE_BUFVEC_INIT(size);
    /* After a copy-up (another handle wrote) the object is stale. */
    bool obj = h->obj_fd >= 0 && atomic_load(&inode_of(fs, ino)->copyups) == h->copyups;
    buf.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
    buf.buf[0].fd = obj ? h->obj_fd : h->fd;
    buf.buf[0].pos = off;
    fuse_reply_data(req, &buf, FUSE_BUF_SPLICE_MOVE);
}

static void op_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in, off_t off,
                         struct fuse_file_info *fi) {
    Fs *fs = fs_of(req);
    Handle *h = (Handle *) (uintptr_t) fi->fh;
    Inode *i = inode_of(fs, ino);
    struct fuse_bufvec out = FUSE_BUFVEC_INIT(fuse_buf_size(in));
    out.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
    out.buf[0].fd = h->fd;
    out.buf[0].pos = off;
    ssize_t n = fuse_buf_copy(&out, in, 0);
    if (n < 0)
        return (void) fuse_reply_err(req, (int) -n);
    atomic_store(&i->dirty, true);
    /* One record per file per batch, however many writes it takes. */
    if (atomic_load(&h->recorded) != committer_current(fs->committer))
        atomic_store(&h->recorded, record(fs, i, false, NULL, NULL));
    fuse_reply_write(req, n);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    fs_of(req);
    /* close(2) semantics of the backing file (e.g. POSIX locks go away). */
    int r = close(dup(((Handle *) (uintptr_t) fi->fh)->fd));
    fuse_reply_err(req, r < 0 ? errno : 0);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    Fs *fs = fs_of(req);
    Handle *h = (Handle *) (uintptr_t) fi->fh;
    Inode *i = inode_of(fs, ino);

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
    bool store = fs->cfg.cas_threshold > 0 && i->opens == 0 && atomic_exchange(&i->dirty, false);
    uint64_t wgen = i->wgen;
    if (store) { /* keep the Inode alive past a FORGET while we hash */
        pthread_mutex_lock(&fs->table_lock);
        i->nlookup++;
        pthread_mutex_unlock(&fs->table_lock);
    }
    pthread_mutex_unlock(&fs->cas_lock);
    safe_close(h->fd);
    safe_close(h->obj_fd);
    free(h);
    fuse_reply_err(req, 0);
    if (store && i != &fs->root) {
        store_object(fs, i, wgen);
        inode_unref(fs, i, 1);
    }
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi) {
    Fs *fs = fs_of(req);
    int fd = ((Handle *) (uintptr_t) fi->fh)->fd;
    /* Honoured in every commit mode: the application asked for it. */
    atomic_fetch_add(&fs->cfg.stats->app_fsyncs, 1);
    int r = datasync ? fdatasync(fd) : fsync(fd);
    fuse_reply_err(req, r < 0 ? errno : 0);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    Fs *fs = fs_of(req);
    DirHandle *d = calloc(1, sizeof(DirHandle));
    int fd = openat(inode_of(fs, ino)->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (!d || fd < 0 || !(d->dp = fdopendir(fd))) {
        int err = d ? errno : ENOMEM;
        safe_close(fd);
        free(d);
        return (void) fuse_reply_err(req, err);
    }
    fi->fh = (uintptr_t) d;
    fuse_reply_open(req, fi);
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi,
                       bool plus) {
    Fs *fs = fs_of(req);
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
        if (plus) {
            struct fuse_entry_param e = {
                .attr.st_ino = d->entry->d_ino,
                .attr.st_mode = d->entry->d_type << 12,
            };
            bool dots = streq(name, ".") || streq(name, "..");
            if (!dots && (err = do_lookup(fs, inode_of(fs, ino), name, &e)))
                break;
            n = fuse_add_direntry_plus(req, buf + size - rem, rem, name, &e, next);
            if (n > rem && !dots) /* did not fit: undo the lookup count */
                inode_unref(fs, inode_of(fs, e.ino), 1);
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
    do_readdir(req, ino, size, off, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
    do_readdir(req, ino, size, off, fi, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    fs_of(req);
    DirHandle *d = (DirHandle *) (uintptr_t) fi->fh;
    closedir(d->dp);
    free(d);
    fuse_reply_err(req, 0);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi) {
    Fs *fs = fs_of(req);
    int fd = dirfd(((DirHandle *) (uintptr_t) fi->fh)->dp);
    atomic_fetch_add(&fs->cfg.stats->app_fsyncs, 1);
    int r = datasync ? fdatasync(fd) : fsync(fd);
    fuse_reply_err(req, r < 0 ? errno : 0);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino) {
    Fs *fs = fs_of(req);
    struct statvfs sv;
    /* Always the state dir's filesystem: that is where the space goes. */
    if (fstatvfs(fs->root.fd, &sv) < 0)
        return (void) fuse_reply_err(req, errno);
    fuse_reply_statfs(req, &sv);
}

static void op_access(fuse_req_t req, fuse_ino_t ino, int mask) {
    Fs *fs = fs_of(req);
    /* Only reached without default_permissions; checks what the backing
     * file allows the daemon. */
    int r = faccessat(AT_FDCWD, PROC(inode_of(fs, ino)->fd), mask, 0);
    fuse_reply_err(req, r < 0 ? errno : 0);
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
};

int fs_new(const FsConfig *cfg, Fs **ret) {
    struct stat st;
    Fs *fs = calloc(1, sizeof(Fs));
    if (!fs)
        return -ENOMEM;
    if (fstatat(cfg->root_fd, "", &st, AT_EMPTY_PATH) < 0) {
        free(fs);
        return negative_errno();
    }
    fs->cfg = *cfg;
    fs->root = (Inode) { .fd = cfg->root_fd, .dev = st.st_dev, .ino = st.st_ino, .nlookup = 2 };
    pthread_mutex_init(&fs->table_lock, NULL);
    pthread_mutex_init(&fs->cas_lock, NULL);
    fs->euid = geteuid();
    fs->timeout = 1.0;
    *ret = fs;
    return 0;
}

void fs_set_committer(Fs *fs, Committer *c) {
    fs->committer = c;
}

static void inode_free(void *p) {
    Inode *i = p;
    safe_close(i->fd);
    free(i);
}

void fs_free(Fs *fs) {
    if (!fs)
        return;
    for (Handle *h = fs->handles, *n; h; h = n) {
        n = h->next;
        safe_close(h->fd);
        safe_close(h->obj_fd);
        free(h);
    }
    tdestroy(fs->table, inode_free);
    pthread_mutex_destroy(&fs->table_lock);
    pthread_mutex_destroy(&fs->cas_lock);
    free(fs);
}
