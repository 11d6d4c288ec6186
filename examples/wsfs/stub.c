/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CAS transitions of a file in the state dir. When the last handle of a
 * file that was written closes and the file is at least cas_threshold
 * bytes, its content is published to the pool (cas.c) and the backing
 * file becomes a stub: xattr user.wsfs.cas = digest. The stub keeps its
 * size, mode and times; its data blocks are punched out (fallocate
 * PUNCH_HOLE|KEEP_SIZE) only after the batch that made the object durable
 * committed. Hence the invariant every crash relies on: a stub whose
 * object is missing still holds its own data. Reads of a stub are served
 * from the object; opening it for writing, or truncating it, first copies
 * the object back (copy-up).
 *
 * Close-to-open and the writeback cache: the kernel writes a file's dirty
 * pages back before it sends FLUSH (fuse_flush) and again before RELEASE
 * (fuse_release, "writes racing with the close"), and a shared mapping
 * keeps the file open, so when the last RELEASE arrives every byte the
 * applications wrote has reached the backing file. The copy into the pool
 * then runs with no lock held; a writer that came meanwhile bumps wgen,
 * and the conversion is dropped (the object, consistent with its name by
 * construction, is then garbage for the sweeper).
 */
#include <fcntl.h>
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

int stub_open_object(Fs *fs, int path_fd, const char *hex) {
    char proc[32];
    bool restored;
    struct stat st;

    int fd = cas_open_object(fs->cfg.pool, &fs->fdc, hex, &restored);
    if (restored) {
        atomic_fetch_add(&fs->cfg.stats->objects_restored, 1);
        fprintf(stderr, "layoutd-wsfs: object %s was in the gc trash while referenced; restored it\n", hex);
    }
    if (fd != -ENOENT)
        return fd;
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", path_fd);
    if (fstatat(path_fd, "", &st, AT_EMPTY_PATH) < 0)
        return negative_errno();
    if (st.st_size > 0 && st.st_blocks == 0) {
        /* Punched, so its object was durable once: it is lost. Say so
         * rather than serve zeros. */
        fprintf(stderr, "layoutd-wsfs: object %s of a punched stub is missing: I/O error\n", hex);
        return -EIO;
    }
    /* A crash before the object was durable: the stub still has the
     * data (it is punched only after), so it stops being one. */
    fprintf(stderr, "layoutd-wsfs: object %s missing, using the stub's own data\n", hex);
    (void) removexattr(proc, WSFS_XATTR_CAS);
    return -ENOENT;
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
    _cleanup_close_ int obj = stub_open_object(fs, path_fd, hex);
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
    if (obj >= 0 && fremovexattr(fd, WSFS_XATTR_CAS) < 0 && errno != ENODATA)
        return negative_errno();
    /* Copying moved the data, it did not change it: keep the times that
     * make and git look at. */
    (void) futimens(fd, (struct timespec[2]) { st.st_atim, st.st_mtim });
    i->stub = STUB_NO;
    atomic_fetch_add(&i->copyups, 1);
    atomic_fetch_add(&fs->cfg.stats->copy_ups, 1);
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

    cas_lock_shared(fs->cfg.pool);
    int r = cas_publish(fs->cfg.pool, &fs->fdc, fd, hex, &obj, &dir, &shard);
    if (r < 0) {
        cas_unlock_shared(fs->cfg.pool);
        stub_log_cas_failure(fs, "storing an object in the content pool", r);
        return;
    }
    atomic_fetch_add(r > 0 ? &fs->cfg.stats->objects_deduplicated : &fs->cfg.stats->objects_stored, 1);

    pthread_mutex_lock(&fs->cas_lock);
    bool ok = i->wgen == wgen && i->writers == 0;
    if (ok && fsetxattr(fd, WSFS_XATTR_CAS, hex, WSFS_HEX_LEN, 0) < 0) {
        stub_log_cas_failure(fs, "setting " WSFS_XATTR_CAS, negative_errno());
        ok = false;
    }
    if (ok)
        i->stub = STUB_YES;
    pthread_mutex_unlock(&fs->cas_lock);
    /* The reference is made (or not): the sweeper may look again. */
    cas_unlock_shared(fs->cfg.pool);

    CommitItem items[3] = { { .fh = i->fh, .full = true } }; /* the xattr must be durable */
    if (ok && fstat(obj, &ost) == 0 && fstat(dir, &dst) == 0) {
        /* An object's handle may not be had (content fs without handles):
         * len 0 makes that batch a syncfs one. */
        if (file_handle_of_fd(&fs->mounts, obj, &items[1].fh) < 0)
            items[1].fh.len = 0;
        if (file_handle_of_fd(&fs->mounts, dir, &items[2].fh) < 0)
            items[2].fh.len = 0;
        items[2].full = true;
        CasPunch p = { .fh = i->fh, .dev = st.st_dev, .ino = st.st_ino };
        memcpy(p.hex, hex, sizeof(hex));
        committer_add(fs->committer, items, ELEMENTSOF(items), shard, &p);
    }
    safe_close(obj);
    safe_close(dir);
}

void fs_punch(void *userdata, const CasPunch *p) {
    Fs *fs = userdata;
    char hex[WSFS_HEX_LEN + 1];
    struct stat st;

    pthread_mutex_lock(&fs->cas_lock);
    /* Open handles may read the stub's own data; a copy-up since then
     * removed the xattr. Either way the data stays. */
    if (inode_table_opens(&fs->inodes, p->dev, p->ino) == 0) {
        _cleanup_close_ int fd = FD_RETRY(&fs->fdc, file_handle_open(&fs->mounts, &p->fh, O_RDWR));
        ssize_t n = fd >= 0 ? fgetxattr(fd, WSFS_XATTR_CAS, hex, WSFS_HEX_LEN) : -1;
        hex[WSFS_HEX_LEN] = 0;
        if (n == WSFS_HEX_LEN && streq(hex, p->hex) && fstat(fd, &st) == 0 && st.st_size > 0 &&
            fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, st.st_size) == 0) {
            (void) futimens(fd, (struct timespec[2]) { st.st_atim, st.st_mtim });
            atomic_fetch_add(&fs->cfg.stats->stubs_punched, 1);
        }
    }
    pthread_mutex_unlock(&fs->cas_lock);
}
