/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One workspace of the isolation (latency) profile (latency.py, README.md
 * "Isolation"): open loop, on a schedule fixed before the run starts.
 *
 *   quiet  a save every --period-ms (phase drawn from --seed, so the quiet
 *          workspaces do not all save at the same instant): 8 new 4 KiB
 *          files, fsync of the last one, fsync of its directory. Latency is
 *          taken from the save's *scheduled* start, so a save that starts
 *          late because the previous one was slow counts its wait (no
 *          coordinated omission).
 *   heavy  files of 4 KiB..1 MiB (log-uniform), file i released at
 *          start + (bytes before it) / --rate: paced, not as fast as it can.
 *          When it falls behind it writes at once (never skips); the rate
 *          it got is reported. No fsync: the daemon's group commit makes it
 *          durable. Every 4 KiB block is stamped (workspace, file, block) so
 *          the content pool cannot deduplicate it away. Files older than
 *          the last --keep-bytes are unlinked, so the workspace's state
 *          stays bounded (the pool's objects stay: gc is off in the run).
 *
 *   flushscope-latency --dir DIR --role quiet|heavy --start-at NS --duration S
 *                      [--rate BYTES_PER_S] [--period-ms MS] [--seed N] [--id ID]
 *                      [--keep-bytes B]
 *
 * --start-at is CLOCK_REALTIME ns (the driver's common instant); the
 * schedule runs on CLOCK_MONOTONIC. Prints one JSON line: the latencies
 * (µs, every save), or the bytes and rate of a heavy writer. Exit 0 when
 * every operation succeeded, 1 otherwise (the JSON says which).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SAVE_FILES 8
#define SAVE_FILE_BYTES 4096
#define HEAVY_MIN 4096
#define HEAVY_MAX (1024 * 1024)
#define CHUNK (256 * 1024)
#define MAX_SAVES 100000
#define RING 65536

static uint64_t now_ns(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

static void sleep_until(uint64_t mono_ns) {
    struct timespec ts = { .tv_sec = (time_t) (mono_ns / 1000000000ull), .tv_nsec = (long) (mono_ns % 1000000000ull) };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static uint64_t rng_state;
static uint64_t rng(void) { /* xorshift64*: reproducible per seed */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}
static double rng_unit(void) { return (double) (rng() >> 11) / (double) (1ull << 53); }

static int write_all(int fd, const char *buf, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, buf, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        buf += w;
        n -= (size_t) w;
    }
    return 0;
}

static const char *id = "?";
static char err[512];

static int fail(const char *what, const char *path, int e) {
    if (!err[0])
        snprintf(err, sizeof err, "%s %s: %s", what, path, strerror(-e));
    return e;
}

/* One save: 8 new files, fsync of the last, fsync of the directory. */
static int save(int dirfd, const char *dir, unsigned k, char *buf) {
    char name[64];
    int r;
    for (unsigned j = 0; j < SAVE_FILES; j++) {
        snprintf(name, sizeof name, "s%06u-%u", k, j);
        memcpy(buf, &k, sizeof k);
        memcpy(buf + 4, &j, sizeof j);
        int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0)
            return fail("create", name, -errno);
        r = write_all(fd, buf, SAVE_FILE_BYTES);
        if (r == 0 && j == SAVE_FILES - 1 && fsync(fd) < 0)
            r = -errno;
        if (close(fd) < 0 && r == 0)
            r = -errno;
        if (r < 0)
            return fail("write/fsync", name, r);
    }
    if (fsync(dirfd) < 0)
        return fail("fsync", dir, -errno);
    return 0;
}

/* This thread's run-queue wait so far (/proc/thread-self/schedstat,
 * second field): time it was runnable and waited for a CPU, ns. */
static uint64_t runq_wait_ns(void) {
    unsigned long long run = 0, wait = 0;
    FILE *f = fopen("/proc/thread-self/schedstat", "re");
    if (!f)
        return 0;
    if (fscanf(f, "%llu %llu", &run, &wait) != 2)
        wait = 0;
    fclose(f);
    return wait;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    const char *dir = NULL, *role = NULL;
    uint64_t start_at = 0, seed = 1, keep = 256ull << 20;
    double duration = 0, rate = 0, period_ms = 1000;
    static const struct option opts[] = {
        { "dir", required_argument, NULL, 'd' },      { "role", required_argument, NULL, 'r' },
        { "start-at", required_argument, NULL, 's' }, { "duration", required_argument, NULL, 't' },
        { "rate", required_argument, NULL, 'R' },     { "period-ms", required_argument, NULL, 'p' },
        { "seed", required_argument, NULL, 'S' },     { "id", required_argument, NULL, 'i' },
        { "keep-bytes", required_argument, NULL, 'k' }, {},
    };
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0)
        switch (c) {
        case 'd': dir = optarg; break;
        case 'r': role = optarg; break;
        case 's': start_at = strtoull(optarg, NULL, 10); break;
        case 't': duration = strtod(optarg, NULL); break;
        case 'R': rate = strtod(optarg, NULL); break;
        case 'p': period_ms = strtod(optarg, NULL); break;
        case 'S': seed = strtoull(optarg, NULL, 10); break;
        case 'i': id = optarg; break;
        case 'k': keep = strtoull(optarg, NULL, 10); break;
        default: return 2;
        }
    bool heavy = role && strcmp(role, "heavy") == 0;
    if (!dir || !role || (!heavy && strcmp(role, "quiet") != 0) || duration <= 0 || period_ms <= 0 ||
        (heavy && rate <= 0)) {
        fprintf(stderr, "usage: see the comment at the top of latency.c\n");
        return 2;
    }
    rng_state = seed * 0x9E3779B97F4A7C15ull + 1;

    int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        fprintf(stderr, "open %s: %m\n", dir);
        return 1;
    }
    char *buf = malloc(CHUNK > SAVE_FILE_BYTES ? CHUNK : SAVE_FILE_BYTES);
    if (!buf)
        return 1;
    for (size_t i = 0; i < CHUNK / 8; i++)
        ((uint64_t *) buf)[i] = rng();

    /* The common instant, on CLOCK_MONOTONIC. */
    int64_t off = (int64_t) start_at - (int64_t) now_ns(CLOCK_REALTIME);
    uint64_t t0 = now_ns(CLOCK_MONOTONIC) + (off > 0 ? (uint64_t) off : 0);
    uint64_t end = t0 + (uint64_t) (duration * 1e9);
    int r = 0;

    if (!heavy) {
        uint64_t period = (uint64_t) (period_ms * 1e6);
        uint64_t phase = (uint64_t) (rng_unit() * (double) period);
        uint64_t *lat = calloc(MAX_SAVES, sizeof *lat);
        uint64_t late_max = 0;
        unsigned n = 0;
        if (!lat)
            return 1;
        for (unsigned k = 0; k < MAX_SAVES; k++) {
            uint64_t sched = t0 + phase + k * period;
            if (sched >= end)
                break;
            sleep_until(sched);
            uint64_t started = now_ns(CLOCK_MONOTONIC);
            if (started - sched > late_max)
                late_max = started - sched;
            r = save(dirfd, dir, k, buf);
            if (r < 0)
                break;
            lat[n++] = (now_ns(CLOCK_MONOTONIC) - sched) / 1000;
        }
        printf("{\"id\":\"%s\",\"role\":\"quiet\",\"ok\":%s,\"saves\":%u,\"period_ms\":%g,\"phase_ms\":%.1f,"
               "\"late_start_max_us\":%" PRIu64 ",\"lat_us\":[",
               id, r < 0 ? "false" : "true", n, period_ms, (double) phase / 1e6, late_max / 1000);
        for (unsigned i = 0; i < n; i++)
            printf("%s%" PRIu64, i ? "," : "", lat[i]);
        qsort(lat, n, sizeof *lat, cmp_u64);
        printf("],\"max_us\":%" PRIu64 ",\"runq_wait_us\":%" PRIu64, n ? lat[n - 1] : 0, runq_wait_ns() / 1000);
        if (err[0])
            printf(",\"error\":\"%s\"", err);
        printf("}\n");
        return r < 0;
    }

    /* heavy */
    static uint64_t ring_size[RING];
    unsigned ring_head = 0, ring_tail = 0;
    uint64_t bytes = 0, files = 0, kept = 0, lag_max = 0;
    char name[64];
    for (;;) {
        uint64_t sched = t0 + (uint64_t) ((double) bytes / rate * 1e9);
        if (sched >= end)
            break;
        sleep_until(sched);
        uint64_t now = now_ns(CLOCK_MONOTONIC);
        if (now >= end)
            break;
        if (now - sched > lag_max)
            lag_max = now - sched;
        double lo = 12, hi = 20; /* log2 of 4 KiB and 1 MiB */
        uint64_t size = (uint64_t) (exp2(lo + (hi - lo) * rng_unit())) & ~4095ull;
        if (size < HEAVY_MIN)
            size = HEAVY_MIN;
        snprintf(name, sizeof name, "h%08" PRIu64, files);
        int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) {
            r = fail("create", name, -errno);
            break;
        }
        for (uint64_t o = 0; o < size && r == 0; o += CHUNK) {
            size_t n = (size_t) (size - o < CHUNK ? size - o : CHUNK);
            for (size_t b = 0; b < n; b += 4096) {
                uint64_t stamp[3] = { seed, files, (o + b) / 4096 };
                memcpy(buf + b, stamp, sizeof stamp);
            }
            r = write_all(fd, buf, n);
        }
        if (close(fd) < 0 && r == 0)
            r = -errno;
        if (r < 0) {
            fail("write", name, r);
            break;
        }
        bytes += size;
        kept += size;
        ring_size[ring_head++ % RING] = size;
        files++;
        /* Bounded state: the oldest files go once past keep bytes. */
        while (kept > keep && ring_tail < ring_head) {
            snprintf(name, sizeof name, "h%08u", ring_tail);
            if (unlinkat(dirfd, name, 0) < 0) {
                r = fail("unlink", name, -errno);
                break;
            }
            kept -= ring_size[ring_tail++ % RING];
        }
        if (r < 0)
            break;
    }
    double secs = (double) (now_ns(CLOCK_MONOTONIC) - t0) / 1e9;
    printf("{\"id\":\"%s\",\"role\":\"heavy\",\"ok\":%s,\"bytes\":%" PRIu64 ",\"files\":%" PRIu64
           ",\"seconds\":%.3f,\"target_MBps\":%.1f,\"got_MBps\":%.1f,\"lag_max_ms\":%.1f",
           id, r < 0 ? "false" : "true", bytes, files, secs, rate / 1e6, secs > 0 ? (double) bytes / secs / 1e6 : 0,
           (double) lag_max / 1e6);
    if (err[0])
        printf(",\"error\":\"%s\"", err);
    printf("}\n");
    return r < 0;
}
