/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CAS transitions of a file in the state dir. When the last handle of a
 * file that was written closes and the file is at least cas_threshold
 * bytes, its content is published to the pool (cas.c) and the backing
 * file becomes a stub: xattr user.wsfs.whole, then user.wsfs.cas =
 * digest. The stub keeps its size, mode and times; its data blocks are
 * punched out (fallocate PUNCH_HOLE|KEEP_SIZE) only after the batch that
 * made the object durable committed, and only after user.wsfs.whole is
 * removed. Reads of a stub are served from the object; opening it for
 * writing, or truncating it, first copies the object back (copy-up).
 *
 * A stub whose object is missing is served from its own blocks only when
 * they are known to hold the whole data: the marker says it (it is set
 * while the file is whole and goes before the punch, so a punched stub,
 * or one of an older daemon, has none), and the data must hash to the
 * digest (which also covers a filesystem that reordered the marker's
 * removal and the punch across a crash). Anything else is EIO, and the
 * reference stays: restoring the object makes the file readable again.
 * (A punched stub whose size is not a multiple of the block size keeps
 * its last, partial block, zeroed: st_blocks alone cannot tell.)
 *
 * Close-to-open and the writeback cache: the kernel writes a file's dirty
 * pages back before it sends FLUSH (fuse_flush) and again before RELEASE
 * (fuse_release, "writes racing with the close"), and a shared mapping
 * keeps the file open, so when the last RELEASE arrives every byte the
 * applications wrote has reached the backing file. The copy into the pool
 * then runs with no lock held; a writer that comes meanwhile bumps wgen,
 * and the copy stops at its next chunk (as it does when the file is
 * deleted or replaced), its temporary file removed.
 *
 * What does not go to the pool: a file with holes (its allocated bytes
 * are fewer than its size: copying, or even hashing, a terabyte of holes
 * is not acceptable; it stays whole, and sparse, in the state dir), and a
 * file that would take this workspace over its --pool-share (share.c).
 */
#include <fcntl.h>
#include <limits.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>

#include "wsfs.h"

#define CAS_LOG_INTERVAL (60 * USEC_PER_SEC)

static usec_t now_mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (usec_t) ts.tv_sec * USEC_PER_SEC + ts.tv_nsec / NSEC_PER_USEC;
}

void stub_log_cas_failure(Fs *fs, const char *what, int r) {
    atomic_fetch_add(&fs->cfg.stats->cas_errors, 1);
    /* The stats file is rewritten only when told: without this a failure
     * stays invisible (to the agent's probe too) until the next commit. */
    committer_stats_changed(fs->committer);
    pthread_mutex_lock(&fs->log_lock);
    usec_t now = now_mono();
    if (now >= fs->cas_log_next) {
        /* One line per interval, however many files fail: a full pool
         * must not turn into a log line per file. */
        if (fs->cas_log_suppressed > 0)
            fprintf(stderr, "layoutd-wsfs: %s failed: %s; files stay in the state dir "
                    "(%" PRIu64 " more failures since the last message; see cas_errors)\n",
                    what, strerror(-r), fs->cas_log_suppressed);
        else
            fprintf(stderr, "layoutd-wsfs: %s failed: %s; files stay in the state dir "
                    "(further failures are counted in cas_errors, logged at most once a minute)\n",
                    what, strerror(-r));
        fs->cas_log_next = now + CAS_LOG_INTERVAL;
        fs->cas_log_suppressed = 0;
    } else
        fs->cas_log_suppressed++;
    pthread_mutex_unlock(&fs->log_lock);
}

static int open_backing(Fs *fs, Inode *i, int path_fd, int flags) {
    char proc[32];
    if (i->fh.len > 0)
        return FD_RETRY(&fs->fdc, file_handle_open(&fs->mounts, &i->fh, flags));
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", path_fd);
    int fd = FD_RETRY(&fs->fdc, open(proc, flags | O_CLOEXEC));
    return fd < 0 ? negative_errno() : fd;
}

/* Whether the stub's own data hashes to hex.
 * Returns: 1 yes, 0 no, <0 on error. */
static int own_data_is(Fs *fs, int path_fd, const char *hex) {
    char proc[32], got[WSFS_HEX_LEN + 1];
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", path_fd);
    _cleanup_close_ int fd = FD_RETRY(&fs->fdc, open(proc, O_RDONLY | O_CLOEXEC));
    if (fd < 0)
        return negative_errno();
    int r = cas_hash_fd(fd, got);
    if (r < 0)
        return r;
    return streq(got, hex);
}

int stub_open_object(Fs *fs, Inode *i, int path_fd, const char *hex) {
    char proc[32], marker[8], path[PATH_MAX];
    bool restored;

    int fd = cas_open_object(fs->cfg.pool, &fs->fdc, hex, &restored);
    if (restored) {
        atomic_fetch_add(&fs->cfg.stats->objects_restored, 1);
        fprintf(stderr, "layoutd-wsfs: object %s was in the gc trash while referenced; restored it\n", hex);
    }
    if (fd != -ENOENT)
        return fd;
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", path_fd);
    ssize_t n = readlink(proc, path, sizeof(path) - 1);
    path[n > 0 ? n : 0] = 0;

    if (!i->own_data_bad && getxattr(proc, WSFS_XATTR_WHOLE, marker, sizeof(marker)) >= 0) {
        /* A crash before the object was durable: the stub was never
         * punched, and its data is the object's (the hash proves it). */
        int r = own_data_is(fs, path_fd, hex);
        if (r > 0) {
            (void) removexattr(proc, WSFS_XATTR_CAS);
            (void) removexattr(proc, WSFS_XATTR_WHOLE);
            atomic_fetch_add(&fs->cfg.stats->stubs_recovered, 1);
            share_note_removed(&fs->share);
            fprintf(stderr, "layoutd-wsfs: object %s of %s is missing; the stub still holds its whole data "
                    "(it hashes to the digest): serving it, the file is ordinary again\n", hex, path);
            return -ENOENT;
        }
        if (r == 0) {
            i->own_data_bad = true; /* do not hash it again at every open */
            fprintf(stderr, "layoutd-wsfs: %s: user.wsfs.whole is set but its data does not hash to %s\n",
                    path, hex);
        } else
            fprintf(stderr, "layoutd-wsfs: %s: reading its own data failed: %s\n", path, strerror(-r));
    }
    atomic_fetch_add(&fs->cfg.stats->missing_eio, 1);
    int k = stats_note_missing(fs->cfg.stats, hex);
    if (k > 0)
        committer_stats_changed(fs->committer); /* the agent reads it there */
    if (k == 2)
        stats_log_missing(fs->cfg.stats, false);
    if (k == 1)
        fprintf(stderr, "layoutd-wsfs: object %s of %s is missing from the content pool: I/O error, "
                "the reference is kept (the file is readable again once the object is back in %s/objects/%.2s/)\n",
                hex, path, fs->cfg.pool->dirs[cas_shard_of(hex, fs->cfg.pool->n_shards)], hex);
    return -EIO;
}

int stub_copy_up(Fs *fs, Inode *i, int path_fd, const char *hex, uint64_t new_size) {
    struct stat st;
    int r;
    _cleanup_close_ int fd = open_backing(fs, i, path_fd, O_RDWR);
    if (fd < 0)
        return fd;
    if (fstat(fd, &st) < 0)
        return negative_errno();
    if (new_size == UINT64_MAX)
        new_size = st.st_size;
    uint64_t keep = MIN((uint64_t) st.st_size, new_size);
    /* Truncated to nothing (O_TRUNC), the object's data is not needed:
     * a file whose object is lost can still be overwritten. */
    _cleanup_close_ int obj = keep > 0 ? stub_open_object(fs, i, path_fd, hex) : -EBADF;
    bool recovered = obj == -ENOENT; /* its own data, already ordinary */
    if (obj < 0 && obj != -ENOENT && obj != -EBADF)
        return obj;
    if (obj >= 0 && (r = cas_copy(obj, fd, keep)) < 0)
        return r;
    if (new_size != (uint64_t) st.st_size && ftruncate(fd, new_size) < 0)
        return negative_errno();
    /* The data must be on disk before the xattr goes, or a crash leaves
     * an ordinary file full of holes. */
    if (fs->cfg.mode != COMMIT_NONE && fdatasync(fd) < 0)
        return negative_errno();
    if (!recovered && fremovexattr(fd, WSFS_XATTR_CAS) < 0 && errno != ENODATA)
        return negative_errno();
    /* After the reference: a stray marker on an ordinary file means
     * nothing (it is set again whenever the file becomes a stub). */
    if (!recovered)
        (void) fremovexattr(fd, WSFS_XATTR_WHOLE);
    /* Copying moved the data, it did not change it: keep the times that
     * make and git look at. */
    (void) futimens(fd, (struct timespec[2]) { st.st_atim, st.st_mtim });
    i->stub = STUB_NO;
    i->own_data_bad = false;
    atomic_fetch_add(&i->copyups, 1);
    atomic_fetch_add(&fs->cfg.stats->copy_ups, 1);
    share_note_removed(&fs->share);
    return 0;
}

int stub_truncate(Fs *fs, Inode *i, int path_fd, uint64_t size) {
    char hex[WSFS_HEX_LEN + 1], proc[32];
    int r = cas_stub_digest(path_fd, hex);
    if (r < 0)
        return r;
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", path_fd);
    r = r > 0 ? stub_copy_up(fs, i, path_fd, hex, size) : truncate(proc, size) < 0 ? negative_errno() : 0;
    if (r >= 0) {
        i->wgen++;
        atomic_store(&i->dirty, true);
    }
    return r;
}

typedef struct StoreCancel {
    Fs *fs;
    Inode *i;
    uint64_t wgen;
    int fd;
} StoreCancel;

/* Between chunks of a copy into the pool: stop when the file was deleted
 * or replaced (its inode has no name left), opened for writing or
 * truncated, or the daemon is stopping. */
static bool store_cancelled(void *userdata) {
    StoreCancel *c = userdata;
    struct stat st;
    if (c->fs->se && fuse_session_exited(c->fs->se))
        return true;
    if (fstat(c->fd, &st) < 0 || st.st_nlink == 0)
        return true;
    pthread_mutex_lock(&c->fs->cas_lock);
    bool written = c->i->wgen != c->wgen || c->i->writers > 0;
    pthread_mutex_unlock(&c->fs->cas_lock);
    return written;
}

void stub_store(Fs *fs, Inode *i, uint64_t wgen) {
    char hex[WSFS_HEX_LEN + 1];
    struct stat st, ost, dst;
    size_t shard;
    int obj = -EBADF, dir = -EBADF;

    if (i->fh.len == 0)
        return; /* no handle: the committer could not name it */
    _cleanup_close_ int fd = FD_RETRY(&fs->fdc, file_handle_open(&fs->mounts, &i->fh, O_RDONLY));
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink == 0 ||
        (uint64_t) st.st_size < fs->cfg.cas_threshold)
        return;
    /* Holes: fewer bytes allocated than the size says (a dense file has
     * at least its size, rounded up to blocks, delayed allocation
     * included). It stays whole in the state dir, where it costs what it
     * allocates. */
    if ((uint64_t) st.st_blocks * 512 < (uint64_t) st.st_size) {
        atomic_fetch_add(&fs->cfg.stats->sparse_kept, 1);
        committer_stats_changed(fs->committer);
        return;
    }
    if (!share_reserve(&fs->share, st.st_size)) {
        atomic_fetch_add(&fs->cfg.stats->share_kept, 1);
        committer_stats_changed(fs->committer);
        return;
    }

    StoreCancel cancel = { fs, i, wgen, fd };
    cas_lock_shared(fs->cfg.pool);
    int r = cas_publish(fs->cfg.pool, &fs->fdc, fd, store_cancelled, &cancel, hex, &obj, &dir, &shard);
    if (r < 0) {
        cas_unlock_shared(fs->cfg.pool);
        share_commit(&fs->share, st.st_size, NULL);
        if (r == -ECANCELED) {
            atomic_fetch_add(&fs->cfg.stats->copies_abandoned, 1);
            committer_stats_changed(fs->committer);
        } else
            stub_log_cas_failure(fs, "storing an object in the content pool", r);
        return;
    }
    atomic_fetch_add(r > 0 ? &fs->cfg.stats->objects_deduplicated : &fs->cfg.stats->objects_stored, 1);

    pthread_mutex_lock(&fs->cas_lock);
    bool ok = i->wgen == wgen && i->writers == 0;
    /* The marker first: whenever the reference exists, the marker was set
     * while the data was whole (a crash between the two leaves an
     * ordinary file with a marker, which means nothing). */
    if (ok && (fsetxattr(fd, WSFS_XATTR_WHOLE, "1", 1, 0) < 0 ||
               fsetxattr(fd, WSFS_XATTR_CAS, hex, WSFS_HEX_LEN, 0) < 0)) {
        stub_log_cas_failure(fs, "setting " WSFS_XATTR_CAS, negative_errno());
        (void) fremovexattr(fd, WSFS_XATTR_WHOLE);
        ok = false;
    }
    if (ok) {
        i->stub = STUB_YES;
        i->own_data_bad = false;
    }
    pthread_mutex_unlock(&fs->cas_lock);
    /* The reference is made (or not): the sweeper may look again. */
    cas_unlock_shared(fs->cfg.pool);
    share_commit(&fs->share, st.st_size, ok ? hex : NULL);

    /* The stub's xattr and the object's name must be durable before the
     * punch; the object's data already is (cas_publish). */
    CommitItem items[2] = { { .fh = i->fh, .full = true } };
    if (ok && fstat(obj, &ost) == 0 && fstat(dir, &dst) == 0) {
        /* A directory's handle may not be had (content fs without
         * handles): len 0 makes that batch a syncfs one. */
        if (file_handle_of_fd(&fs->mounts, dir, &items[1].fh) < 0)
            items[1].fh.len = 0;
        items[1].full = true;
        CasPunch p = { .fh = i->fh, .dev = st.st_dev, .ino = st.st_ino };
        memcpy(p.hex, hex, sizeof(hex));
        committer_add(fs->committer, items, ELEMENTSOF(items), shard, &p);
    }
    safe_close(obj);
    safe_close(dir);
}

/* A punch kept for later; failures counts the tries that failed for
 * another reason than open handles. */
typedef struct PunchLater {
    CasPunch p;
    unsigned failures;
} PunchLater;

/* A kept punch that keeps failing (a filesystem without hole punching,
 * say) is given up after this many tries: the file stays whole, which
 * costs space, never data. */
#define PUNCH_LATER_TRIES 8

typedef enum PunchResult {
    PUNCH_DONE,   /* punched */
    PUNCH_MOOT,   /* nothing to punch: no longer a stub of that object, gone */
    PUNCH_BUSY,   /* open handles may read its own data */
    PUNCH_FAILED, /* an error: try again later */
} PunchResult;

/* Punches the stub p names if nothing has it open and it is still a stub
 * of p->hex. Its object must be durable. cas_lock held. */
static PunchResult punch_now(Fs *fs, const CasPunch *p) {
    char hex[WSFS_HEX_LEN + 1];
    struct stat st;

    /* Open handles may read the stub's own data; a copy-up since then
     * removed the xattr. Either way the data stays. */
    if (inode_table_opens(&fs->inodes, p->dev, p->ino) > 0)
        return PUNCH_BUSY;
    _cleanup_close_ int fd = FD_RETRY(&fs->fdc, file_handle_open(&fs->mounts, &p->fh, O_RDWR));
    if (fd < 0)
        return errno == ESTALE || errno == ENOENT ? PUNCH_MOOT : PUNCH_FAILED;
    ssize_t n = fgetxattr(fd, WSFS_XATTR_CAS, hex, WSFS_HEX_LEN);
    hex[WSFS_HEX_LEN] = 0;
    if (n != WSFS_HEX_LEN || !streq(hex, p->hex) || fstat(fd, &st) < 0 || st.st_size == 0)
        return PUNCH_MOOT;
    /* Punched already (by a try that ran beside this one). */
    if ((uint64_t) st.st_blocks * 512 < (uint64_t) st.st_size && fgetxattr(fd, WSFS_XATTR_WHOLE, NULL, 0) < 0)
        return PUNCH_MOOT;
    /* The marker goes first: once any block may be a hole, the stub must
     * never be taken for whole. If the punch then fails, the marker stays
     * off (a punch may have freed some blocks); a later try punches what
     * is left. */
    if (fremovexattr(fd, WSFS_XATTR_WHOLE) < 0 && errno != ENODATA)
        return PUNCH_FAILED;
    if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, st.st_size) < 0)
        return PUNCH_FAILED;
    (void) futimens(fd, (struct timespec[2]) { st.st_atim, st.st_mtim });
    atomic_fetch_add(&fs->cfg.stats->stubs_punched, 1);
    committer_stats_changed(fs->committer);
    return PUNCH_DONE;
}

/* Keeps p for later (one entry per inode: a newer punch replaces an
 * older one). A retry puts back an entry it took out (newer = false):
 * while it ran without the lock a newer punch of the inode may have come,
 * and that one stays. cas_lock held. */
static void punch_later(Fs *fs, const CasPunch *p, unsigned failures, bool newer) {
    for (size_t k = 0; k < fs->n_later; k++)
        if (fs->later[k].p.dev == p->dev && fs->later[k].p.ino == p->ino) {
            if (newer)
                fs->later[k] = (PunchLater) { *p, failures };
            return;
        }
    if (fs->n_later == fs->cap_later) {
        size_t cap = fs->cap_later * 2 + 16;
        PunchLater *l = reallocarray(fs->later, cap, sizeof(PunchLater));
        if (!l)
            return; /* a missed saving, never a loss: the stub stays whole */
        fs->later = l;
        fs->cap_later = cap;
    }
    fs->later[fs->n_later++] = (PunchLater) { *p, failures };
    atomic_store(&fs->cfg.stats->punches_pending, fs->n_later);
    committer_stats_changed(fs->committer);
}

void fs_punch(void *userdata, const CasPunch *p, bool durable) {
    Fs *fs = userdata;
    pthread_mutex_lock(&fs->cas_lock);
    PunchResult r = durable ? punch_now(fs, p) : PUNCH_FAILED;
    if (r == PUNCH_BUSY || r == PUNCH_FAILED)
        punch_later(fs, p, 0, true);
    pthread_mutex_unlock(&fs->cas_lock);
}

void fs_batch_done(void *userdata) {
    Fs *fs = userdata;
    stub_punch_later_retry(fs, NULL);
}

/* Makes a kept punch's object durable again (its batch may have failed,
 * or the daemon may have died before it), and the stub's xattrs with it.
 * Returns: 0, -ENOENT (the object is not in the pool), other <0. */
static int punch_make_durable(Fs *fs, const CasPunch *p) {
    bool restored;
    char sub[3] = { p->hex[0], p->hex[1], 0 };
    int r = 0;

    cas_lock_shared(fs->cfg.pool);
    _cleanup_close_ int obj = cas_open_object(fs->cfg.pool, &fs->fdc, p->hex, &restored);
    if (obj < 0)
        r = obj;
    else {
        size_t shard = cas_shard_of(p->hex, fs->cfg.pool->n_shards);
        _cleanup_close_ int dir = openat(fs->cfg.pool->objects_fds[shard], sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fsync(obj) < 0 || dir < 0 || fsync(dir) < 0 || fsync(fs->cfg.pool->objects_fds[shard]) < 0)
            r = negative_errno();
    }
    cas_unlock_shared(fs->cfg.pool);
    if (r < 0)
        return r;
    _cleanup_close_ int fd = FD_RETRY(&fs->fdc, file_handle_open(&fs->mounts, &p->fh, O_RDONLY));
    if (fd < 0)
        return negative_errno();
    return fsync(fd) < 0 ? negative_errno() : 0;
}

void stub_punch_later_retry(Fs *fs, const struct stat *only) {
    pthread_mutex_lock(&fs->cas_lock);
    if (fs->n_later == 0) {
        pthread_mutex_unlock(&fs->cas_lock);
        return;
    }
    /* Taken out of the list while the slow part runs without the lock;
     * what is not done goes back. */
    PunchLater *mine = NULL;
    size_t n = 0, keep = 0;
    for (size_t k = 0; k < fs->n_later; k++) {
        PunchLater *l = &fs->later[k];
        bool want = (!only || (l->p.dev == only->st_dev && l->p.ino == only->st_ino)) &&
                    inode_table_opens(&fs->inodes, l->p.dev, l->p.ino) == 0;
        if (!want) {
            fs->later[keep++] = *l;
            continue;
        }
        PunchLater *m = reallocarray(mine, n + 1, sizeof(PunchLater));
        if (!m) {
            fs->later[keep++] = *l;
            continue;
        }
        mine = m;
        mine[n++] = *l;
    }
    fs->n_later = keep;
    pthread_mutex_unlock(&fs->cas_lock);

    for (size_t k = 0; k < n; k++) {
        PunchLater *l = &mine[k];
        int r = punch_make_durable(fs, &l->p);
        if (r == -ENOENT || r == -ESTALE)
            continue; /* the object, or the stub, is gone: its own data stays */
        pthread_mutex_lock(&fs->cas_lock);
        PunchResult pr = r < 0 ? PUNCH_FAILED : punch_now(fs, &l->p);
        if (pr == PUNCH_BUSY)
            punch_later(fs, &l->p, l->failures, false);
        else if (pr == PUNCH_FAILED && l->failures + 1 < PUNCH_LATER_TRIES)
            punch_later(fs, &l->p, l->failures + 1, false);
        else if (pr == PUNCH_FAILED)
            fprintf(stderr, "layoutd-wsfs: giving up punching a stub of object %s after %d tries; it stays "
                    "whole on the state volume\n", l->p.hex, PUNCH_LATER_TRIES);
        pthread_mutex_unlock(&fs->cas_lock);
    }
    free(mine);
    pthread_mutex_lock(&fs->cas_lock);
    atomic_store(&fs->cfg.stats->punches_pending, fs->n_later);
    committer_stats_changed(fs->committer);
    pthread_mutex_unlock(&fs->cas_lock);
}

void stub_punch_found_whole(Fs *fs, int dir_fd, const char *name, const char *hex) {
    struct stat st;
    CasPunch p = {};
    _cleanup_close_ int fd = openat(dir_fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || file_handle_of_fd(&fs->mounts, fd, &p.fh) < 0)
        return;
    p.dev = st.st_dev;
    p.ino = st.st_ino;
    memcpy(p.hex, hex, WSFS_HEX_LEN);
    p.hex[WSFS_HEX_LEN] = 0;
    atomic_fetch_add(&fs->cfg.stats->stubs_found_whole, 1);
    pthread_mutex_lock(&fs->cas_lock);
    punch_later(fs, &p, 0, true);
    pthread_mutex_unlock(&fs->cas_lock);
    stub_punch_later_retry(fs, &st);
}
