/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The content-addressed pool. An object is a file's whole content, named
 * by its SHA-256 (lowercase hex H) and kept at
 *     <content dir of shard S>/objects/<H[0:2]>/<H>
 * where S = (first 4 hex digits of H as a 16-bit number) % n_shards.
 * Objects are immutable (mode 0444). A file is published by copying it
 * into a temporary file objects/.tmp.<pid>.<n> of shard 0 while hashing
 * it (one pass over the source: the name is only known at the end), then
 * renaming the copy into place with RENAME_NOREPLACE, so several daemons
 * can share a pool: whoever loses the race drops its copy, and no reader
 * ever sees a partial object. The copy is hashed as it is written, so an
 * object always holds exactly what its name says, even if the source
 * changed meanwhile (the caller then simply does not reference it).
 *
 * The sweeper (gc.c) shares two things with this file: the pool lock
 * (<dir[0]>/gc.lock, flock()ed shared here around publishing and
 * referencing, exclusive by the sweeper while it quarantines) and the
 * trash (<dir>/trash/H), from which an object that is opened is put back.
 */
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>

#include "wsfs.h"

#define CHUNK (1024 * 1024)

int cas_pool_open(CasPool *p, char **dirs, size_t n, int *dir_fds, size_t *ret_bad) {
    struct stat st;
    *p = (CasPool) { .lock_fd = -EBADF };
    const char *e = getenv("LAYOUTD_WSFS_TEST_COPY_DELAY_MS");
    if (!isempty(e))
        p->test_copy_delay_ms = (unsigned) strtoul(e, NULL, 10);
    p->objects_fds = calloc(n, sizeof(int));
    p->dir_fds = calloc(n, sizeof(int));
    p->devs = calloc(n, sizeof(dev_t));
    p->dirs = dirs;
    pthread_mutex_init(&p->lock_mutex, NULL);
    if (!p->objects_fds || !p->dir_fds || !p->devs) {
        cas_pool_close(p);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        p->objects_fds[i] = p->dir_fds[i] = -EBADF;
    p->n_shards = n;

    for (size_t i = 0; i < n; i++) {
        int r = 0;
        if (dir_fds && dir_fds[i] >= 0)
            p->dir_fds[i] = TAKE_FD(dir_fds[i]); /* opened and checked by the caller */
        else
            p->dir_fds[i] = open(dirs[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (p->dir_fds[i] < 0 || (mkdirat(p->dir_fds[i], "objects", 0755) < 0 && errno != EEXIST))
            r = negative_errno();
        if (r == 0) {
            p->objects_fds[i] = openat(p->dir_fds[i], "objects", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (p->objects_fds[i] < 0 || faccessat(p->objects_fds[i], ".", W_OK | X_OK, AT_EACCESS) < 0 ||
                fstat(p->objects_fds[i], &st) < 0)
                r = negative_errno();
            else
                p->devs[i] = st.st_dev;
        }
        if (r == 0 && i == 0) {
            p->lock_fd = openat(p->dir_fds[0], "gc.lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
            if (p->lock_fd < 0)
                r = negative_errno();
        }
        if (r < 0) {
            *ret_bad = i;
            cas_pool_close(p);
            return r;
        }
    }
    return 0;
}

void cas_pool_none(CasPool *p) {
    *p = (CasPool) { .lock_fd = -EBADF };
    pthread_mutex_init(&p->lock_mutex, NULL);
    p->no_pool = true;
}

void cas_pool_close(CasPool *p) {
    for (size_t i = 0; i < p->n_shards; i++) {
        safe_close(p->objects_fds[i]);
        safe_close(p->dir_fds[i]);
    }
    free(p->objects_fds);
    free(p->dir_fds);
    free(p->devs);
    p->objects_fds = p->dir_fds = NULL;
    p->devs = NULL;
    p->lock_fd = safe_close(p->lock_fd);
    if (p->n_shards > 0 || p->dirs || p->no_pool)
        pthread_mutex_destroy(&p->lock_mutex);
    p->n_shards = 0;
    p->dirs = NULL;
}

size_t cas_shard_of(const char *hex, size_t n_shards) {
    char head[5] = { hex[0], hex[1], hex[2], hex[3], 0 };
    return (size_t) strtoul(head, NULL, 16) % n_shards;
}

bool cas_is_hex(const char *s) {
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
            return false;
    return n == WSFS_HEX_LEN;
}

void cas_lock_shared(CasPool *p) {
    pthread_mutex_lock(&p->lock_mutex);
    /* flock() locks belong to the open file description, not the thread:
     * one shared lock for the process, counted. Blocks (every publisher
     * of this process with it) while the sweeper holds it exclusively. */
    if (p->lock_users++ == 0 && p->lock_fd >= 0)
        while (flock(p->lock_fd, LOCK_SH) < 0 && errno == EINTR)
            ;
    pthread_mutex_unlock(&p->lock_mutex);
}

void cas_unlock_shared(CasPool *p) {
    pthread_mutex_lock(&p->lock_mutex);
    if (--p->lock_users == 0 && p->lock_fd >= 0)
        (void) flock(p->lock_fd, LOCK_UN);
    pthread_mutex_unlock(&p->lock_mutex);
}

static void to_hex(const unsigned char *md, char *out) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < 32; i++) {
        out[2 * i] = digits[md[i] >> 4];
        out[2 * i + 1] = digits[md[i] & 15];
    }
    out[WSFS_HEX_LEN] = 0;
}

/* A chunk buffer per thread, kept: a 1 MiB malloc per file is an mmap,
 * its page faults and a munmap each time (no difference above the noise
 * in fusehop, but it is work for nothing). Freed when the thread exits
 * (libfuse's workers come and go). NULL when out of memory. */
static pthread_key_t chunk_key;
static pthread_once_t chunk_once = PTHREAD_ONCE_INIT;

static void chunk_key_init(void) {
    (void) pthread_key_create(&chunk_key, free);
}

static unsigned char *chunk_buffer(void) {
    pthread_once(&chunk_once, chunk_key_init);
    unsigned char *buf = pthread_getspecific(chunk_key);
    if (!buf && (buf = malloc(CHUNK)) && pthread_setspecific(chunk_key, buf) != 0) {
        free(buf);
        buf = NULL;
    }
    return buf;
}

/* Reads in from offset 0 to EOF, hashing, and writes every chunk to out
 * when out >= 0. Between chunks it asks cancel (may be NULL), so that a
 * copy of a file deleted, replaced or written meanwhile stops early.
 * Returns: <0 on error (-ECANCELED), 0 on success. */
static int hash_copy(const CasPool *p, int in, int out, CasCancelFn cancel, void *userdata,
                     char ret_hex[WSFS_HEX_LEN + 1]) {
    unsigned char *buf = chunk_buffer();
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char md[32];
    int r = -EIO;

    if (!buf || !ctx) {
        EVP_MD_CTX_free(ctx);
        return -ENOMEM;
    }
    if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
        goto out;
    for (off_t off = 0, last = 0;;) {
        /* After a whole chunk (more may follow): a file of one chunk is
         * only asked once, by the caller before it publishes. */
        if (cancel && last == CHUNK && cancel(userdata)) {
            r = -ECANCELED;
            goto out;
        }
        ssize_t n = pread(in, buf, CHUNK, off);
        if (n < 0) {
            r = negative_errno();
            goto out;
        }
        if (n == 0)
            break;
        if (EVP_DigestUpdate(ctx, buf, n) != 1)
            goto out;
        for (ssize_t done = 0; out >= 0 && done < n;) {
            ssize_t w = pwrite(out, buf + done, n - done, off + done);
            if (w < 0) {
                r = negative_errno();
                goto out;
            }
            done += w;
        }
        off += n;
        last = n;
        if (p && p->test_copy_delay_ms > 0 && out >= 0)
            nanosleep(&(struct timespec) { p->test_copy_delay_ms / 1000, (p->test_copy_delay_ms % 1000) * 1000000L },
                      NULL);
    }
    if (EVP_DigestFinal_ex(ctx, md, NULL) != 1)
        goto out;
    to_hex(md, ret_hex);
    r = 0;
out:
    EVP_MD_CTX_free(ctx);
    return r;
}

int cas_hash_fd(int fd, char ret_hex[WSFS_HEX_LEN + 1]) {
    return hash_copy(NULL, fd, -EBADF, NULL, NULL, ret_hex);
}

/* An existing object is about to be referenced again: its mtime says so,
 * so the sweeper's grace period starts over (git freshens the same way). */
static int freshen(int dir, const char *hex) {
    return utimensat(dir, hex, NULL, 0) < 0 ? negative_errno() : 0;
}

int cas_publish(CasPool *p, FdCache *fdc, int src_fd, CasCancelFn cancel, void *userdata,
                char ret_hex[WSFS_HEX_LEN + 1], int *ret_obj_fd, int *ret_dir_fd, size_t *ret_shard) {
    static atomic_uint counter;
    if (p->n_shards == 0)
        return -EOPNOTSUPP;
    char hex[WSFS_HEX_LEN + 1], sub[3], tmp[80], tmp2[80];
    _cleanup_close_ int dir = -EBADF;
    int r, existed = 0;

    snprintf(tmp, sizeof(tmp), ".tmp.%d.%u", (int) getpid(), atomic_fetch_add(&counter, 1));
    _cleanup_close_ int t = FD_RETRY(fdc, openat(p->objects_fds[0], tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444));
    if (t < 0)
        return negative_errno();
    int tmp_dir = p->objects_fds[0];
    r = hash_copy(p, src_fd, t, cancel, userdata, hex);
    if (r < 0)
        goto fail;

    size_t shard = cas_shard_of(hex, p->n_shards);
    memcpy(sub, hex, 2);
    sub[2] = 0;
    if (mkdirat(p->objects_fds[shard], sub, 0755) < 0 && errno != EEXIST) {
        r = negative_errno();
        goto fail;
    }
    dir = FD_RETRY(fdc, openat(p->objects_fds[shard], sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir < 0) {
        r = negative_errno();
        goto fail;
    }
    if (faccessat(dir, hex, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
        existed = 1;
    else if (errno != ENOENT) {
        r = negative_errno();
        goto fail;
    } else if (p->devs[shard] != p->devs[0]) {
        /* That shard is another filesystem: one more copy, of our own
         * copy (the source is not read twice). */
        snprintf(tmp2, sizeof(tmp2), "%.70s.x", tmp);
        _cleanup_close_ int t2 = FD_RETRY(fdc, openat(p->objects_fds[shard], tmp2, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444));
        _cleanup_close_ int rd = FD_RETRY(fdc, openat(tmp_dir, tmp, O_RDONLY | O_CLOEXEC));
        struct stat st;
        if (t2 < 0 || rd < 0 || fstat(rd, &st) < 0) {
            r = negative_errno();
            if (t2 >= 0)
                (void) unlinkat(p->objects_fds[shard], tmp2, 0);
            goto fail;
        }
        (void) unlinkat(tmp_dir, tmp, 0);
        tmp_dir = p->objects_fds[shard];
        snprintf(tmp, sizeof(tmp), "%s", tmp2);
        if ((r = cas_copy(rd, t2, st.st_size)) < 0)
            goto fail;
        if (!p->no_sync && fdatasync(t2) < 0) { /* see below */
            r = negative_errno();
            goto fail;
        }
    } else if (!p->no_sync && fdatasync(t) < 0) {
        /* An object is named only once its data is durable. Named early,
         * a write that fails later (EIO: the host filesystem under a
         * sparse image filled up) would leave a named object with bad
         * data; another daemon would deduplicate against it, and its
         * batch's fdatasync (a new fd, the error already seen by the
         * first daemon: errseq) would report success and punch a whole
         * stub. The chaos suite's host-full fault lost files that way. */
        r = negative_errno();
        goto fail;
    }
    /* Deleted or written during the last chunk: a new object nobody will
     * reference would only wait for the sweeper's grace period. */
    if (!existed && cancel && cancel(userdata)) {
        r = -ECANCELED;
        goto fail;
    }
    if (!existed && renameat2(tmp_dir, tmp, dir, hex, RENAME_NOREPLACE) < 0) {
        if (errno != EEXIST) {
            r = negative_errno();
            goto fail;
        }
        existed = 1; /* another daemon won the race */
    }
    if (existed) {
        (void) unlinkat(tmp_dir, tmp, 0);
        if ((r = freshen(dir, hex)) < 0)
            return r;
    }
    int obj = FD_RETRY(fdc, openat(dir, hex, O_RDONLY | O_CLOEXEC));
    if (obj < 0)
        return negative_errno();
    memcpy(ret_hex, hex, sizeof(hex));
    *ret_obj_fd = obj;
    *ret_dir_fd = TAKE_FD(dir);
    *ret_shard = shard;
    return existed;
fail:
    (void) unlinkat(tmp_dir, tmp, 0);
    return r;
}

int cas_open_object(CasPool *p, FdCache *fdc, const char *hex, bool *ret_restored) {
    char path[WSFS_HEX_LEN + 8], trash[WSFS_HEX_LEN + 8];
    if (p->n_shards == 0)
        return -EIO; /* a stub, and the daemon runs without a pool */
    size_t shard = cas_shard_of(hex, p->n_shards);
    snprintf(path, sizeof(path), "%.2s/%s", hex, hex);
    *ret_restored = false;
    int fd = FD_RETRY(fdc, openat(p->objects_fds[shard], path, O_RDONLY | O_CLOEXEC));
    if (fd >= 0 || errno != ENOENT)
        return fd < 0 ? negative_errno() : fd;
    /* In the sweeper's trash? It quarantines only objects nothing
     * references, so this "cannot happen"; if it does (a reference the
     * sweeper could not see), the object goes back rather than be lost. */
    snprintf(trash, sizeof(trash), "trash/%s", hex);
    if (renameat2(p->dir_fds[shard], trash, p->objects_fds[shard], path, RENAME_NOREPLACE) == 0)
        *ret_restored = true;
    else if (errno == ENOENT && faccessat(p->objects_fds[shard], path, F_OK, 0) < 0) {
        /* objects/xx may not exist yet */
        char sub[3] = { hex[0], hex[1], 0 };
        if (mkdirat(p->objects_fds[shard], sub, 0755) == 0 &&
            renameat2(p->dir_fds[shard], trash, p->objects_fds[shard], path, RENAME_NOREPLACE) == 0)
            *ret_restored = true;
    }
    fd = FD_RETRY(fdc, openat(p->objects_fds[shard], path, O_RDONLY | O_CLOEXEC));
    return fd < 0 ? negative_errno() : fd;
}

int cas_object_state(const CasPool *p, const char *hex) {
    char path[WSFS_HEX_LEN + 8];
    if (p->n_shards == 0)
        return 0;
    size_t shard = cas_shard_of(hex, p->n_shards);
    snprintf(path, sizeof(path), "%.2s/%s", hex, hex);
    if (faccessat(p->objects_fds[shard], path, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
        return 1;
    if (errno != ENOENT)
        return negative_errno();
    snprintf(path, sizeof(path), "trash/%s", hex);
    if (faccessat(p->dir_fds[shard], path, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
        return 2;
    return errno == ENOENT ? 0 : negative_errno();
}

int cas_copy(int in_fd, int out_fd, uint64_t len) {
    _cleanup_free_ char *buf = NULL;
    off_t off = 0;

    while ((uint64_t) off < len) {
        ssize_t n = -1;
        if (!buf) {
            /* copy_file_range shares extents where it can (XFS reflink);
             * across filesystems it may refuse: then plain read/write. */
            loff_t in_off = off, out_off = off;
            n = copy_file_range(in_fd, &in_off, out_fd, &out_off, len - off, 0);
            if (n < 0 && errno != EXDEV && errno != EINVAL && errno != EOPNOTSUPP && errno != ENOSYS)
                return negative_errno();
            if (n < 0 && !(buf = malloc(CHUNK)))
                return -ENOMEM;
        }
        if (buf) {
            n = pread(in_fd, buf, MIN((uint64_t) CHUNK, len - off), off);
            if (n < 0)
                return negative_errno();
            if (n > 0 && pwrite(out_fd, buf, n, off) != n)
                return errno > 0 ? -errno : -ENOSPC;
        }
        if (n == 0)
            return -EIO; /* the object is shorter than the stub says */
        off += n;
    }
    return 0;
}

int cas_stub_digest(int fd, char ret_hex[WSFS_HEX_LEN + 1]) {
    char proc[64], val[WSFS_HEX_LEN + 1];
    /* getxattr on an O_PATH fd needs the /proc path, as in passthrough_ll. */
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
    ssize_t n = getxattr(proc, WSFS_XATTR_CAS, val, sizeof(val));
    if (n < 0)
        return errno == ENODATA || errno == ENOTSUP ? 0 : negative_errno();
    if (n != WSFS_HEX_LEN)
        return -EBADMSG;
    val[n] = 0;
    memcpy(ret_hex, val, sizeof(val));
    return 1;
}
