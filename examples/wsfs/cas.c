/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The content-addressed pool. An object is a file's whole content, named
 * by its SHA-256 (lowercase hex H) and kept at
 *     <content dir of shard S>/objects/<H[0:2]>/<H>
 * where S = (first 4 hex digits of H as a 16-bit number) % n_shards.
 * Objects are immutable (mode 0444) and published by writing a temporary
 * file in the same objects/<H[0:2]> directory and renaming it into place
 * with RENAME_NOREPLACE, so several daemons can share a pool: whoever loses
 * the race drops its copy, and no reader ever sees a partial object.
 */
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "wsfs.h"

#define CHUNK (1024 * 1024)

int cas_pool_open(CasPool *p, char **dirs, size_t n, size_t *ret_bad) {
    *p = (CasPool) {};
    p->objects_fds = calloc(n, sizeof(int));
    p->dirs = dirs;
    if (!p->objects_fds)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        p->objects_fds[i] = -EBADF;
    p->n_shards = n;

    for (size_t i = 0; i < n; i++) {
        _cleanup_close_ int dfd = open(dirs[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0 || (mkdirat(dfd, "objects", 0755) < 0 && errno != EEXIST)) {
            int r = negative_errno();
            *ret_bad = i;
            cas_pool_close(p);
            return r;
        }
        p->objects_fds[i] = openat(dfd, "objects", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (p->objects_fds[i] < 0 || faccessat(p->objects_fds[i], ".", W_OK | X_OK, AT_EACCESS) < 0) {
            int r = negative_errno();
            *ret_bad = i;
            cas_pool_close(p);
            return r;
        }
    }
    return 0;
}

void cas_pool_close(CasPool *p) {
    for (size_t i = 0; i < p->n_shards && p->objects_fds; i++)
        safe_close(p->objects_fds[i]);
    free(p->objects_fds);
    p->objects_fds = NULL;
    p->n_shards = 0;
}

size_t cas_shard_of(const char *hex, size_t n_shards) {
    char head[5] = { hex[0], hex[1], hex[2], hex[3], 0 };
    return (size_t) strtoul(head, NULL, 16) % n_shards;
}

static void to_hex(const unsigned char *md, char *out) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < 32; i++) {
        out[2 * i] = digits[md[i] >> 4];
        out[2 * i + 1] = digits[md[i] & 15];
    }
    out[WSFS_HEX_LEN] = 0;
}

/* Reads in from offset 0 to EOF, hashing; also writes every chunk to out
 * when out >= 0. Returns: <0 on error, 0 on success. */
static int hash_copy(int in, int out, char ret_hex[WSFS_HEX_LEN + 1]) {
    _cleanup_free_ unsigned char *buf = malloc(CHUNK);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char md[32];
    int r = -EIO;

    if (!buf || !ctx) {
        EVP_MD_CTX_free(ctx);
        return -ENOMEM;
    }
    if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
        goto out;
    for (off_t off = 0;;) {
        ssize_t n = pread(in, buf, CHUNK, off);
        if (n < 0) {
            r = negative_errno();
            goto out;
        }
        if (n == 0)
            break;
        if (EVP_DigestUpdate(ctx, buf, n) != 1)
            goto out;
        if (out >= 0 && pwrite(out, buf, n, off) != n) {
            r = errno > 0 ? -errno : -ENOSPC;
            goto out;
        }
        off += n;
    }
    if (EVP_DigestFinal_ex(ctx, md, NULL) != 1)
        goto out;
    to_hex(md, ret_hex);
    r = 0;
out:
    EVP_MD_CTX_free(ctx);
    return r;
}

int cas_publish(CasPool *p, int src_fd, char ret_hex[WSFS_HEX_LEN + 1],
                int *ret_obj_fd, int *ret_dir_fd, size_t *ret_shard) {
    char hex[WSFS_HEX_LEN + 1], check[WSFS_HEX_LEN + 1], sub[3], tmp[128];
    int r, existed = 1;

    r = hash_copy(src_fd, -EBADF, hex);
    if (r < 0)
        return r;
    size_t shard = cas_shard_of(hex, p->n_shards);
    memcpy(sub, hex, 2);
    sub[2] = 0;
    if (mkdirat(p->objects_fds[shard], sub, 0755) < 0 && errno != EEXIST)
        return negative_errno();
    _cleanup_close_ int dir = openat(p->objects_fds[shard], sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return negative_errno();

    _cleanup_close_ int obj = openat(dir, hex, O_RDONLY | O_CLOEXEC);
    if (obj < 0 && errno != ENOENT)
        return negative_errno();
    if (obj < 0) {
        static atomic_uint counter;
        snprintf(tmp, sizeof(tmp), ".tmp.%d.%u.%.16s", (int) getpid(), atomic_fetch_add(&counter, 1), hex);
        _cleanup_close_ int t = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
        if (t < 0)
            return negative_errno();
        /* Second pass: copy and hash again. The source is a live file; if
         * it changed since the first pass the copy does not match its name,
         * and an object must never hold content other than its name says. */
        r = hash_copy(src_fd, t, check);
        if (r >= 0 && !streq(check, hex))
            r = -EAGAIN;
        if (r >= 0 && renameat2(dir, tmp, dir, hex, RENAME_NOREPLACE) < 0)
            r = errno == EEXIST ? 1 : negative_errno(); /* another daemon won the race */
        if (r != 0)
            (void) unlinkat(dir, tmp, 0);
        if (r < 0)
            return r;
        existed = r;
        obj = openat(dir, hex, O_RDONLY | O_CLOEXEC);
        if (obj < 0)
            return negative_errno();
    }
    memcpy(ret_hex, hex, sizeof(hex));
    *ret_obj_fd = TAKE_FD(obj);
    *ret_dir_fd = TAKE_FD(dir);
    *ret_shard = shard;
    return existed;
}

int cas_open_object(CasPool *p, const char *hex) {
    char path[WSFS_HEX_LEN + 8];
    snprintf(path, sizeof(path), "%.2s/%s", hex, hex);
    int fd = openat(p->objects_fds[cas_shard_of(hex, p->n_shards)], path, O_RDONLY | O_CLOEXEC);
    return fd < 0 ? negative_errno() : fd;
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
