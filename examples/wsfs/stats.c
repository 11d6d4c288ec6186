/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#include "wsfs.h"

static const char *const op_table[_OP_MAX] = {
    [OP_INIT] = "init", [OP_LOOKUP] = "lookup", [OP_FORGET] = "forget", [OP_GETATTR] = "getattr",
    [OP_SETATTR] = "setattr", [OP_READLINK] = "readlink", [OP_MKNOD] = "mknod", [OP_MKDIR] = "mkdir",
    [OP_SYMLINK] = "symlink", [OP_LINK] = "link", [OP_UNLINK] = "unlink", [OP_RMDIR] = "rmdir",
    [OP_RENAME] = "rename", [OP_CREATE] = "create", [OP_OPEN] = "open", [OP_READ] = "read",
    [OP_WRITE] = "write", [OP_FLUSH] = "flush", [OP_RELEASE] = "release", [OP_FSYNC] = "fsync",
    [OP_OPENDIR] = "opendir", [OP_READDIR] = "readdir", [OP_READDIRPLUS] = "readdirplus",
    [OP_RELEASEDIR] = "releasedir", [OP_FSYNCDIR] = "fsyncdir", [OP_STATFS] = "statfs",
    [OP_ACCESS] = "access", [OP_GETXATTR] = "getxattr", [OP_SETXATTR] = "setxattr",
    [OP_LISTXATTR] = "listxattr", [OP_REMOVEXATTR] = "removexattr",
    [OP_COPY_FILE_RANGE] = "copy_file_range", [OP_FALLOCATE] = "fallocate",
};

const char *wsfs_op_to_string(WsfsOp op) {
    return op >= 0 && op < _OP_MAX ? op_table[op] : NULL;
}

void stats_init(Stats *s) {
    *s = (Stats) {};
    pthread_mutex_init(&s->missing_lock, NULL);
    atomic_store(&s->pool_share, UINT64_MAX);
}

void stats_done(Stats *s) {
    digest_set_done(&s->missing);
    pthread_mutex_destroy(&s->missing_lock);
}

static usec_t now_mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (usec_t) ts.tv_sec * USEC_PER_SEC + ts.tv_nsec / NSEC_PER_USEC;
}

int stats_note_missing(Stats *s, const char *hex) {
    Digest d;
    int ret = 0;
    if (!digest_from_hex(hex, &d))
        return 0;
    pthread_mutex_lock(&s->missing_lock);
    /* Out of memory: count it anyway (it may then be counted twice). */
    if (digest_set_add(&s->missing, &d) != 0) {
        uint64_t n = atomic_fetch_add(&s->objects_missing, 1) + 1;
        if (s->n_missing_listed < WSFS_MISSING_LISTED)
            memcpy(s->missing_listed[s->n_missing_listed++], hex, WSFS_HEX_LEN + 1);
        ret = n <= WSFS_MISSING_LOGGED ? 1 : 2;
        if (ret == 2)
            s->missing_unnamed++;
    }
    pthread_mutex_unlock(&s->missing_lock);
    return ret;
}

size_t stats_recheck_missing(Stats *s, int (*object_state)(void *userdata, const char *hex), void *userdata) {
    size_t back = 0;
    pthread_mutex_lock(&s->missing_lock);
    if (s->missing.n == 0) {
        pthread_mutex_unlock(&s->missing_lock);
        return 0;
    }
    /* Rebuilt from the ones still missing: the set has no removal, and
     * the listed digests follow the set. */
    DigestSet still = {};
    size_t listed = 0;
    bool failed = false;
    for (size_t i = 0; i < s->missing.cap; i++) {
        if (!s->missing.used[i])
            continue;
        char hex[WSFS_HEX_LEN + 1];
        digest_to_hex(&s->missing.slots[i], hex);
        if (object_state(userdata, hex) > 0) {
            back++;
            continue;
        }
        if (digest_set_add(&still, &s->missing.slots[i]) < 0) {
            failed = true;
            break;
        }
        if (listed < WSFS_MISSING_LISTED)
            memcpy(s->missing_listed[listed++], hex, WSFS_HEX_LEN + 1);
    }
    if (failed || back == 0) { /* out of memory: the old count stands (never less than the truth) */
        digest_set_done(&still);
        pthread_mutex_unlock(&s->missing_lock);
        return failed ? 0 : back;
    }
    digest_set_done(&s->missing);
    s->missing = still;
    s->n_missing_listed = listed;
    atomic_store(&s->objects_missing, still.n);
    pthread_mutex_unlock(&s->missing_lock);
    return back;
}

void stats_log_missing(Stats *s, bool now_or_never) {
    pthread_mutex_lock(&s->missing_lock);
    usec_t now = now_mono();
    if (s->missing_unnamed > 0 && (now_or_never || now >= s->missing_log_next)) {
        fprintf(stderr, "layoutd-wsfs: %" PRIu64 " more objects missing from the content pool, not named here "
                "(%" PRIu64 " in all; `layoutd-wsfs fsck` lists every stub without its object)\n",
                s->missing_unnamed, (uint64_t) atomic_load(&s->objects_missing));
        s->missing_unnamed = 0;
        s->missing_log_next = now + 60 * USEC_PER_SEC;
    }
    pthread_mutex_unlock(&s->missing_lock);
}

int stats_format(Stats *s, const char *commit_mode, char *buf, size_t size) {
#define V(f) ((uint64_t) atomic_load(&s->f))
    char ops[2048], missing[WSFS_MISSING_LISTED * (WSFS_HEX_LEN + 3) + 1], share[32];
    size_t o = 0, m = 0;
    /* Only the opcodes that were seen: the object stays short. */
    for (int i = 0; i < _OP_MAX && o < sizeof(ops); i++) {
        uint64_t v = atomic_load(&s->ops[i]);
        if (v > 0)
            o += snprintf(ops + o, sizeof(ops) - o, "%s\"%s\":%" PRIu64, o ? "," : "", op_table[i], v);
    }
    if (o >= sizeof(ops))
        o = 0;
    ops[o] = 0;
    pthread_mutex_lock(&s->missing_lock);
    for (size_t i = 0; i < s->n_missing_listed; i++)
        m += snprintf(missing + m, sizeof(missing) - m, "%s\"%s\"", i ? "," : "", s->missing_listed[i]);
    pthread_mutex_unlock(&s->missing_lock);
    missing[m] = 0;
    if (V(pool_share) == UINT64_MAX)
        strcpy(share, "null");
    else
        snprintf(share, sizeof(share), "%" PRIu64, V(pool_share));
    return snprintf(buf, size,
                    "{\"commit\":\"%s\",\"operations\":%" PRIu64 ",\"records\":%" PRIu64
                    ",\"records_committed\":%" PRIu64 ",\"batches\":%" PRIu64
                    ",\"flushes\":%" PRIu64 ",\"flush_us\":%" PRIu64 ",\"flush_errors\":%" PRIu64
                    ",\"app_fsyncs\":%" PRIu64 ",\"objects_stored\":%" PRIu64
                    ",\"objects_deduplicated\":%" PRIu64 ",\"objects_restored\":%" PRIu64
                    ",\"stubs_punched\":%" PRIu64 ",\"punches_pending\":%" PRIu64 ",\"stubs_found_whole\":%" PRIu64
                    ",\"copy_ups\":%" PRIu64 ",\"cas_errors\":%" PRIu64
                    ",\"inodes\":%" PRIu64 ",\"fds_cached\":%" PRIu64 ",\"fds_handles\":%" PRIu64
                    ",\"fd_cache_hits\":%" PRIu64 ",\"fd_cache_misses\":%" PRIu64
                    ",\"fd_cache_evictions\":%" PRIu64 ",\"fd_cache_waits\":%" PRIu64
                    ",\"fd_sheds\":%" PRIu64 ",\"objects_missing\":%" PRIu64 ",\"missing_eio\":%" PRIu64
                    ",\"missing_objects\":[%s],\"stubs_recovered\":%" PRIu64 ",\"sparse_kept\":%" PRIu64
                    ",\"copies_abandoned\":%" PRIu64 ",\"share_kept\":%" PRIu64 ",\"store_clones\":%" PRIu64
                    ",\"pool_share\":%s"
                    ",\"pool_bytes\":%" PRIu64 ",\"pool_objects\":%" PRIu64 ",\"pool_counted\":%s"
                    ",\"scans\":%" PRIu64 ",\"scan_ms\":%" PRIu64 ",\"scan_errors\":%" PRIu64
                    ",\"ops\":{%s}}",
                    commit_mode, V(operations), V(records), V(records_committed), V(batches),
                    V(flushes), V(flush_us), V(flush_errors), V(app_fsyncs), V(objects_stored),
                    V(objects_deduplicated), V(objects_restored), V(stubs_punched), V(punches_pending),
                    V(stubs_found_whole), V(copy_ups),
                    V(cas_errors), V(inodes), V(fds_cached), V(fds_handles), V(fd_cache_hits),
                    V(fd_cache_misses), V(fd_cache_evictions), V(fd_cache_waits), V(fd_sheds),
                    V(objects_missing), V(missing_eio), missing, V(stubs_recovered), V(sparse_kept),
                    V(copies_abandoned), V(share_kept), V(store_clones), share, V(pool_bytes), V(pool_objects),
                    atomic_load(&s->pool_counted) ? "true" : "false", V(scans), V(scan_ms), V(scan_errors),
                    ops);
#undef V
}

int stats_write(Stats *s, const char *commit_mode, const char *path) {
    char buf[8192], tmp[4096];
    int n = stats_format(s, commit_mode, buf, sizeof(buf) - 1);
    if (n < 0 || (size_t) n >= sizeof(buf) - 1)
        return -EOVERFLOW;
    buf[n++] = '\n';
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int) sizeof(tmp))
        return -ENAMETOOLONG;

    _cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return negative_errno();
    if (write(fd, buf, n) != n) {
        int r = negative_errno();
        (void) unlink(tmp);
        return r;
    }
    /* Readers only ever see a whole file: the rename replaces it atomically. */
    if (rename(tmp, path) < 0) {
        int r = negative_errno();
        (void) unlink(tmp);
        return r;
    }
    return 0;
}
