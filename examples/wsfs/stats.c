/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>

#include "wsfs.h"

int stats_format(Stats *s, const char *commit_mode, char *buf, size_t size) {
#define V(f) ((uint64_t) atomic_load(&s->f))
    return snprintf(buf, size,
                    "{\"commit\":\"%s\",\"operations\":%" PRIu64 ",\"records\":%" PRIu64
                    ",\"records_committed\":%" PRIu64 ",\"batches\":%" PRIu64
                    ",\"flushes\":%" PRIu64 ",\"flush_us\":%" PRIu64 ",\"flush_errors\":%" PRIu64
                    ",\"app_fsyncs\":%" PRIu64 ",\"objects_stored\":%" PRIu64
                    ",\"objects_deduplicated\":%" PRIu64 ",\"stubs_punched\":%" PRIu64
                    ",\"copy_ups\":%" PRIu64 ",\"cas_errors\":%" PRIu64 "}",
                    commit_mode, V(operations), V(records), V(records_committed), V(batches),
                    V(flushes), V(flush_us), V(flush_errors), V(app_fsyncs), V(objects_stored),
                    V(objects_deduplicated), V(stubs_punched), V(copy_ups), V(cas_errors));
#undef V
}

int stats_write(Stats *s, const char *commit_mode, const char *path) {
    char buf[1024], tmp[4096];
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
