/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fusehop-stream: the "artifact" stream of the fusehop benchmark. Writes
 * SIZE bytes to FILE in write(2)s of BS bytes (default 1 KiB), fsyncs,
 * closes, then reads the file back and checks every byte (a pattern
 * derived from the offset, so a reordered or lost write is caught).
 *
 *   fusehop-stream --file FILE [--size BYTES] [--bs BYTES] [--phase both|write|verify]
 *
 * Prints one JSON object: write_s (the writes), fsync_s, close_s, total_s
 * (open to close), per-write latency p50/p99/max in µs, cpu_user_s,
 * cpu_sys_s of this process, ok. Exit status 0 only if everything
 * succeeded and the content matched. --phase write skips the check and
 * --phase verify only checks an existing file (prints {"ok":true}), so
 * that a driver can read the daemons' CPU between the two (the large-write
 * kind of fusehop).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static void fill(unsigned char *b, size_t n, uint64_t off) {
    for (size_t i = 0; i < n; i++) {
        uint64_t x = off + i;
        b[i] = (unsigned char) (x * 2654435761u >> 13) ^ (unsigned char) (x >> 10);
    }
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
    return x < y ? -1 : x > y;
}

static int fail(const char *what) {
    printf("{\"ok\":false,\"error\":\"%s: %s\"}\n", what, strerror(errno));
    return 1;
}

int main(int argc, char **argv) {
    static const struct option opts[] = {
        { "file", required_argument, NULL, 'f' },
        { "size", required_argument, NULL, 's' },
        { "bs", required_argument, NULL, 'b' },
        { "phase", required_argument, NULL, 'p' },
        {},
    };
    const char *file = NULL;
    uint64_t size = 32ULL << 20, bs = 1024;
    bool do_write = true, do_verify = true;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0) {
        switch (c) {
        case 'f': file = optarg; break;
        case 's': size = strtoull(optarg, NULL, 10); break;
        case 'b': bs = strtoull(optarg, NULL, 10); break;
        case 'p':
            do_write = strcmp(optarg, "verify") != 0;
            do_verify = strcmp(optarg, "write") != 0;
            if (strcmp(optarg, "both") != 0 && strcmp(optarg, "write") != 0 && strcmp(optarg, "verify") != 0)
                return 2;
            break;
        default: return 2;
        }
    }
    if (!file || bs == 0 || bs > (1 << 20) || size == 0 || size % bs) {
        fprintf(stderr, "usage: fusehop-stream --file FILE [--size BYTES] [--bs BYTES] (SIZE a multiple of BS)\n");
        return 2;
    }
    size_t n = size / bs;
    uint64_t *lat = calloc(n, sizeof(uint64_t));
    unsigned char *buf = malloc(bs), *chk = malloc(1 << 20), *exp = malloc(1 << 20);
    if (!lat || !buf || !chk || !exp)
        return fail("malloc");

    uint64_t t0 = now_ns(), t1 = t0, t2 = t0, t3 = t0;
    int fd;
    if (!do_write)
        goto verify;
    fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return fail("open");
    for (size_t i = 0; i < n; i++) {
        fill(buf, bs, i * bs);
        uint64_t a = now_ns();
        if (write(fd, buf, bs) != (ssize_t) bs)
            return fail("write");
        lat[i] = now_ns() - a;
    }
    t1 = now_ns();
    if (fsync(fd) < 0)
        return fail("fsync");
    t2 = now_ns();
    if (close(fd) < 0)
        return fail("close");
    t3 = now_ns();
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru); /* the writer's CPU, not the check's */
    if (!do_verify)
        goto report;

verify:
    /* Read back and check (not timed). */
    fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail("reopen");
    uint64_t off = 0;
    for (;;) {
        ssize_t r = read(fd, chk, 1 << 20);
        if (r < 0)
            return fail("read");
        if (r == 0)
            break;
        fill(exp, r, off);
        if (memcmp(chk, exp, r) != 0) {
            printf("{\"ok\":false,\"error\":\"content differs near offset %" PRIu64 "\"}\n", off);
            return 1;
        }
        off += r;
    }
    close(fd);
    if (off != size) {
        printf("{\"ok\":false,\"error\":\"read back %" PRIu64 " of %" PRIu64 " bytes\"}\n", off, size);
        return 1;
    }
    if (!do_write) {
        printf("{\"ok\":true}\n");
        return 0;
    }
report:
    qsort(lat, n, sizeof(uint64_t), cmp_u64);
    printf("{\"ok\":true,\"size\":%" PRIu64 ",\"bs\":%" PRIu64 ",\"writes\":%zu,\"write_s\":%.6f,\"fsync_s\":%.6f,"
           "\"close_s\":%.6f,\"total_s\":%.6f,\"write_p50_us\":%.2f,\"write_p99_us\":%.2f,\"write_max_us\":%.1f,"
           "\"cpu_user_s\":%.3f,\"cpu_sys_s\":%.3f}\n",
           size, bs, n, (t1 - t0) / 1e9, (t2 - t1) / 1e9, (t3 - t2) / 1e9, (t3 - t0) / 1e9, lat[n / 2] / 1e3,
           lat[(size_t) (n * 0.99)] / 1e3, lat[n - 1] / 1e3, ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
           ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
    return 0;
}
