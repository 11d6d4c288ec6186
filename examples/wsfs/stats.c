/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>

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

int stats_format(Stats *s, const char *commit_mode, char *buf, size_t size) {
#define V(f) ((uint64_t) atomic_load(&s->f))
    char ops[2048];
    size_t o = 0;
    /* Only the opcodes that were seen: the object stays short. */
    for (int i = 0; i < _OP_MAX && o < sizeof(ops); i++) {
        uint64_t v = atomic_load(&s->ops[i]);
        if (v > 0)
            o += snprintf(ops + o, sizeof(ops) - o, "%s\"%s\":%" PRIu64, o ? "," : "", op_table[i], v);
    }
    if (o >= sizeof(ops))
        o = 0;
    ops[o] = 0;
    return snprintf(buf, size,
                    "{\"commit\":\"%s\",\"operations\":%" PRIu64 ",\"records\":%" PRIu64
                    ",\"records_committed\":%" PRIu64 ",\"batches\":%" PRIu64
                    ",\"flushes\":%" PRIu64 ",\"flush_us\":%" PRIu64 ",\"flush_errors\":%" PRIu64
                    ",\"app_fsyncs\":%" PRIu64 ",\"objects_stored\":%" PRIu64
                    ",\"objects_deduplicated\":%" PRIu64 ",\"objects_restored\":%" PRIu64
                    ",\"stubs_punched\":%" PRIu64 ",\"copy_ups\":%" PRIu64 ",\"cas_errors\":%" PRIu64
                    ",\"inodes\":%" PRIu64 ",\"fds_cached\":%" PRIu64 ",\"fds_handles\":%" PRIu64
                    ",\"fd_cache_hits\":%" PRIu64 ",\"fd_cache_misses\":%" PRIu64
                    ",\"fd_cache_evictions\":%" PRIu64 ",\"fd_cache_waits\":%" PRIu64
                    ",\"fd_sheds\":%" PRIu64 ",\"ops\":{%s}}",
                    commit_mode, V(operations), V(records), V(records_committed), V(batches),
                    V(flushes), V(flush_us), V(flush_errors), V(app_fsyncs), V(objects_stored),
                    V(objects_deduplicated), V(objects_restored), V(stubs_punched), V(copy_ups),
                    V(cas_errors), V(inodes), V(fds_cached), V(fds_handles), V(fd_cache_hits),
                    V(fd_cache_misses), V(fd_cache_evictions), V(fd_cache_waits), V(fd_sheds), ops);
#undef V
}

int stats_write(Stats *s, const char *commit_mode, const char *path) {
    char buf[4096], tmp[4096];
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
