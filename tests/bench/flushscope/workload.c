/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * flushscope-workload: one workspace's part of the flush-scope benchmark.
 *
 *   flushscope-workload --dir DIR --files F --seed S --mode fuse|syncfs|fsync|buffered
 *                       [--stats-file PATH --daemon-pid PID] [--start-at NS]
 *                       [--id NAME] [--durable-timeout SEC]
 *                       [--batch-records N] [--batch-ms MS]
 *
 * Phases, each timed: write F files (sizes drawn from a fixed mix: 80 %
 * below 4 KiB, 17 % 4-256 KiB, 3 % 256 KiB-8 MiB, log-uniform within a
 * band), read everything back and check it, overwrite 20 %, rename 10 %,
 * delete 30 %, walk and lstat what is left (and check the count and the
 * bytes). Every file's content is unique (each 4 KiB block is stamped with
 * seed, file, generation and block number), so a content-addressed daemon
 * gets nothing for free from deduplication.
 *
 * Modes say who makes the data durable:
 *   fuse      the FUSE daemon behind DIR (group commit); no fsync here. With
 *             --stats-file/--daemon-pid, the durable point is measured: see
 *             "Times" below.
 *   syncfs    the daemon's group commit, done here without FUSE
 *             (groupcommit.c: the rules of layoutd-wsfs --commit=syncfs,
 *             batches of --batch-records 512 records or --batch-ms 50 ms
 *             after their first record, then syncfs(2) of DIR's
 *             filesystem, in a committer thread). Records are counted as
 *             the daemon counts them (examples/wsfs/ops.c): one per mkdir,
 *             create or O_TRUNC open, rename and unlink, and one per file
 *             and batch for its writes.
 *   fsync     fsync(2) of every file written (before close) and of every
 *             directory whose entries changed, once per directory and phase.
 *   buffered  nothing; never durable (the floor).
 *
 * Times (seconds from the common start, CLOCK_MONOTONIC):
 *   accepted_s   the last mutating operation (end of the delete phase)
 *                returned;
 *   end_s        the walk finished (the whole workload returned);
 *   durable_s    fuse: the first moment at which a stats file written
 *                after accepted_s reports records_committed == records,
 *                i.e. every record the daemon took by then is committed.
 *                syncfs: the commit that made every record durable
 *                (the workload waits for it after the walk).
 *                A watcher thread starts at accepted_s, sends SIGUSR1 to
 *                the daemon (which forces an unthrottled stats write) and
 *                polls the file every 2 ms (re-signalling every 250 ms).
 *                fsync: = accepted_s (every change was fsynced before it
 *                returned). buffered: null.
 *   completed_s  max(end_s, durable_s): the workspace is done and its last
 *                byte is durable. buffered: = end_s, marked not durable.
 *
 * Time in flush (for the benchmark's time decomposition): syncfs: the
 * committer's time inside syncfs(2) ("commit".flush_us); fsync: the time
 * inside fsync(2) of files and directories ("fsync_us"); fuse: the
 * daemon's own counter (its stats file, read by the driver).
 *
 * Prints one JSON object on stdout. Exit status 0 only if every operation
 * and every check succeeded.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "groupcommit.h"
#include "macro.h"

#define CHUNK (1024 * 1024)
#define BLOCK 4096
#define STAMP_MAGIC UINT64_C(0x6c61796f75746400) /* "layoutd\0" */
#define FILES_PER_DIR 64
#define LEAVES_PER_TOP 16

typedef enum Mode { MODE_FUSE, MODE_SYNCFS, MODE_FSYNC, MODE_BUFFERED, _MODE_MAX, _MODE_INVALID = -EINVAL } Mode;

static const char *const mode_table[_MODE_MAX] = {
    [MODE_FUSE] = "fuse",
    [MODE_SYNCFS] = "syncfs",
    [MODE_FSYNC] = "fsync",
    [MODE_BUFFERED] = "buffered",
};

static const char *mode_to_string(Mode m) {
    return m >= 0 && m < _MODE_MAX ? mode_table[m] : NULL;
}

static Mode mode_from_string(const char *s) {
    for (int i = 0; s && i < _MODE_MAX; i++)
        if (streq(s, mode_table[i]))
            return i;
    return _MODE_INVALID;
}

typedef struct File {
    uint64_t size;
    uint32_t dir, gen;
    bool renamed, deleted;
} File;

/* Latency samples of one kind of operation, in nanoseconds. */
typedef struct Lat {
    const char *name;
    uint64_t *ns;
    size_t n, cap;
} Lat;

typedef struct Run {
    const char *dir, *id, *stats_file;
    Mode mode;
    uint64_t seed, n_files, n_dirs;
    pid_t daemon_pid;
    uint64_t start_at_ns;
    double durable_timeout;
    uint64_t batch_records, batch_ms;
    GroupCommit *gc;   /* syncfs mode */
    File *files;
    uint8_t *pattern;  /* 2 * CHUNK random bytes, sliced per file */
    uint8_t *buf;      /* CHUNK */
    int root_fd;
    bool *dir_dirty;   /* fsync mode: directories to fsync at phase end */
    uint64_t t0;       /* CLOCK_MONOTONIC ns at the common start */
    uint64_t bytes_written, bytes_read, dir_fsyncs, file_fsyncs;
    uint64_t fsync_ns; /* fsync mode: time inside fsync(2) */
    Lat lat_write, lat_read, lat_stat;
    char error[512];
} Run;

static uint64_t now_ns(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static double since_start(const Run *r, uint64_t t) {
    return (double) (t - r->t0) / 1e9;
}

_printf_(2, 3) static int fail(Run *r, const char *fmt, ...) {
    int saved = errno;
    va_list ap;
    if (!r->error[0]) {
        va_start(ap, fmt);
        errno = saved;
        vsnprintf(r->error, sizeof(r->error), fmt, ap);
        va_end(ap);
    }
    return -EIO;
}

/* splitmix64: small, fast, and good enough for sizes and permutations. */
static uint64_t rnd_next(uint64_t *s) {
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static double rnd_unit(uint64_t *s) {
    return (double) (rnd_next(s) >> 11) / (double) (UINT64_C(1) << 53);
}

static uint64_t log_uniform(uint64_t *s, double lo, double hi) {
    return (uint64_t) exp(log(lo) + rnd_unit(s) * (log(hi) - log(lo)));
}

static uint64_t draw_size(uint64_t *s) {
    double u = rnd_unit(s);
    if (u < 0.80)
        return 100 + rnd_next(s) % (4000 - 100);
    if (u < 0.97)
        return log_uniform(s, 4 * KIB, 256 * KIB);
    return log_uniform(s, 256 * KIB, 8 * MIB);
}

/* syncfs mode: one record of the group commit (no-op otherwise).
 * Returns: the batch it joined (0 when there is no group commit). */
static uint64_t record(Run *r) {
    return r->gc ? group_commit_add(r->gc) : 0;
}

/* fsync mode: fsync(2), timed. */
static int timed_fsync(Run *r, int fd) {
    uint64_t t = now_ns(CLOCK_MONOTONIC);
    int ret = fsync(fd);
    r->fsync_ns += now_ns(CLOCK_MONOTONIC) - t;
    return ret;
}

static int lat_add(Lat *l, uint64_t ns) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 1024;
        uint64_t *p = reallocarray(l->ns, cap, sizeof(uint64_t));
        if (!p)
            return -ENOMEM;
        l->ns = p;
        l->cap = cap;
    }
    l->ns[l->n++] = ns;
    return 0;
}

static void path_of(const Run *r, size_t i, char *p, size_t size) {
    const File *f = &r->files[i];
    uint32_t d = f->renamed ? (uint32_t) ((f->dir + 7) % r->n_dirs) : f->dir;
    snprintf(p, size, "t%03u/l%03u/%s%06zu", d / LEAVES_PER_TOP, d % LEAVES_PER_TOP, f->renamed ? "r" : "f", i);
}

static void dir_of(const Run *r, uint32_t d, char *p, size_t size) {
    snprintf(p, size, "t%03u/l%03u", d / LEAVES_PER_TOP, d % LEAVES_PER_TOP);
}

/* The content of one chunk of file i, generation gen: a slice of the random
 * pattern with every 4 KiB block stamped, so no two blocks of the run are
 * equal and reading back can tell a wrong block from a right one. */
static void fill_chunk(Run *r, size_t i, uint32_t gen, uint64_t off, size_t len) {
    size_t start = (size_t) ((i * 8191 + gen * 131 + off / BLOCK) % CHUNK);
    memcpy(r->buf, r->pattern + start, len);
    for (uint64_t b = 0; b < len; b += BLOCK) {
        uint64_t stamp[4] = { STAMP_MAGIC, r->seed, ((uint64_t) gen << 32) | i, (off + b) / BLOCK };
        memcpy(r->buf + b, stamp, MIN(sizeof(stamp), len - b));
    }
}

static int check_chunk(Run *r, size_t i, uint32_t gen, uint64_t off, size_t len) {
    for (uint64_t b = 0; b < len; b += BLOCK) {
        uint64_t stamp[4] = { STAMP_MAGIC, r->seed, ((uint64_t) gen << 32) | i, (off + b) / BLOCK };
        if (memcmp(r->buf + b, stamp, MIN(sizeof(stamp), len - b)) != 0)
            return -EBADMSG;
    }
    return 0;
}

static int write_file(Run *r, size_t i, bool create) {
    File *f = &r->files[i];
    char p[64];
    path_of(r, i, p, sizeof(p));
    uint64_t t = now_ns(CLOCK_MONOTONIC);
    _cleanup_close_ int fd = openat(r->root_fd, p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return fail(r, "open %s for writing: %m", p);
    /* The daemon records a create, and an open with O_TRUNC, at once;
     * then one record per batch in which the handle writes. */
    uint64_t recorded = record(r);
    for (uint64_t off = 0; off < f->size; off += CHUNK) {
        size_t len = (size_t) MIN((uint64_t) CHUNK, f->size - off);
        fill_chunk(r, i, f->gen, off, len);
        for (size_t done = 0; done < len;) {
            ssize_t n = pwrite(fd, r->buf + done, len - done, (off_t) (off + done));
            if (n <= 0)
                return fail(r, "write %s: %m", p);
            done += (size_t) n;
            if (r->gc && recorded != group_commit_current(r->gc))
                recorded = record(r);
        }
    }
    if (r->mode == MODE_FSYNC) {
        if (timed_fsync(r, fd) < 0)
            return fail(r, "fsync %s: %m", p);
        r->file_fsyncs++;
    }
    if (close(TAKE_FD(fd)) < 0)
        return fail(r, "close %s: %m", p);
    r->bytes_written += f->size;
    if (create)
        r->dir_dirty[f->dir] = true;
    return lat_add(&r->lat_write, now_ns(CLOCK_MONOTONIC) - t);
}

static int read_file(Run *r, size_t i) {
    File *f = &r->files[i];
    char p[64];
    path_of(r, i, p, sizeof(p));
    uint64_t t = now_ns(CLOCK_MONOTONIC), got = 0;
    _cleanup_close_ int fd = openat(r->root_fd, p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail(r, "open %s for reading: %m", p);
    for (bool eof = false; !eof;) {
        /* Fill a whole chunk (a short read may end anywhere), so stamps
         * stay at block boundaries. */
        size_t n = 0;
        while (n < CHUNK) {
            ssize_t k = read(fd, r->buf + n, CHUNK - n);
            if (k < 0)
                return fail(r, "read %s: %m", p);
            if (k == 0) {
                eof = true;
                break;
            }
            n += (size_t) k;
        }
        if (check_chunk(r, i, f->gen, got, n) < 0)
            return fail(r, "%s: wrong content at offset %" PRIu64, p, got);
        got += n;
    }
    if (got != f->size)
        return fail(r, "%s: read %" PRIu64 " bytes, wrote %" PRIu64, p, got, f->size);
    r->bytes_read += got;
    return lat_add(&r->lat_read, now_ns(CLOCK_MONOTONIC) - t);
}

/* fsync mode: the directories whose entries changed in this phase. */
static int sync_dirs(Run *r) {
    if (r->mode != MODE_FSYNC)
        return 0;
    for (uint32_t d = 0; d < r->n_dirs; d++) {
        if (!r->dir_dirty[d])
            continue;
        char p[64];
        dir_of(r, d, p, sizeof(p));
        _cleanup_close_ int fd = openat(r->root_fd, p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || timed_fsync(r, fd) < 0)
            return fail(r, "fsync directory %s: %m", p);
        r->dir_fsyncs++;
        r->dir_dirty[d] = false;
    }
    return 0;
}

/* A random permutation of 0..n-1 (Fisher-Yates), from its own stream. */
static int permutation(uint64_t seed, size_t n, size_t **ret) {
    size_t *p = malloc(MAX(n, (size_t) 1) * sizeof(size_t));
    if (!p)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        p[i] = i;
    for (size_t i = n; i > 1; i--) {
        size_t j = rnd_next(&seed) % i;
        size_t t = p[i - 1];
        p[i - 1] = p[j];
        p[j] = t;
    }
    *ret = p;
    return 0;
}

static int walk(Run *r, int dfd, const char *rel, uint64_t *files, uint64_t *bytes, unsigned depth) {
    _cleanup_close_ int fd = openat(dfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return fail(r, "open directory %s: %m", rel);
    int fd2 = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (fd2 < 0)
        return fail(r, "dup: %m");
    DIR *d = fdopendir(fd2);
    if (!d) {
        safe_close(fd2);
        return fail(r, "fdopendir %s: %m", rel);
    }
    int ret = 0;
    for (struct dirent *de; ret >= 0 && (errno = 0, de = readdir(d));) {
        if (streq(de->d_name, ".") || streq(de->d_name, ".."))
            continue;
        struct stat st;
        uint64_t t = now_ns(CLOCK_MONOTONIC);
        if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            ret = fail(r, "stat %s/%s: %m", rel, de->d_name);
            break;
        }
        if ((ret = lat_add(&r->lat_stat, now_ns(CLOCK_MONOTONIC) - t)) < 0)
            break;
        if (S_ISDIR(st.st_mode)) {
            if (depth < 4)
                ret = walk(r, fd, de->d_name, files, bytes, depth + 1);
        } else if (S_ISREG(st.st_mode)) {
            (*files)++;
            *bytes += (uint64_t) st.st_size;
        }
    }
    if (ret >= 0 && errno != 0)
        ret = fail(r, "readdir %s: %m", rel);
    closedir(d);
    return ret;
}

/* ---- the durable point of a FUSE daemon (see the header comment) ---- */

typedef struct Watch {
    Run *run;
    pthread_t thread;
    uint64_t durable_ns;   /* CLOCK_MONOTONIC, 0 = not reached */
    uint64_t polls, signals;
    char last[1024];       /* the stats file that showed it */
    int error;
} Watch;

static bool json_u64(const char *s, const char *key, uint64_t *ret) {
    char k[64];
    snprintf(k, sizeof(k), "\"%s\":", key);
    const char *p = strstr(s, k);
    if (!p)
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(p + strlen(k), &end, 10);
    if (errno || end == p + strlen(k))
        return false;
    *ret = v;
    return true;
}

static void *watch_thread(void *arg) {
    Watch *w = arg;
    Run *r = w->run;
    uint64_t limit = now_ns(CLOCK_MONOTONIC) + (uint64_t) (r->durable_timeout * 1e9);
    uint64_t signalled = 0, sig_real = 0;

    for (;;) {
        uint64_t now = now_ns(CLOCK_MONOTONIC);
        if (now > limit) {
            w->error = -ETIMEDOUT;
            return NULL;
        }
        if (now - signalled >= 250 * 1000000ULL) {
            /* Coarse realtime: file timestamps come from the coarse clock,
             * so a file written after this point never looks older. */
            if (!sig_real)
                sig_real = now_ns(CLOCK_REALTIME_COARSE);
            if (kill(r->daemon_pid, SIGUSR1) < 0) {
                w->error = negative_errno();
                return NULL;
            }
            w->signals++;
            signalled = now;
        }
        w->polls++;
        struct stat st;
        _cleanup_close_ int fd = open(r->stats_file, O_RDONLY | O_CLOEXEC);
        if (fd >= 0 && fstat(fd, &st) == 0 &&
            (uint64_t) st.st_mtim.tv_sec * 1000000000ULL + (uint64_t) st.st_mtim.tv_nsec >= sig_real) {
            char buf[1024];
            ssize_t n = read(fd, buf, sizeof(buf) - 1);
            uint64_t rec, com, errs = 0;
            if (n > 0) {
                buf[n] = 0;
                if (json_u64(buf, "records", &rec) && json_u64(buf, "records_committed", &com) && rec == com) {
                    w->durable_ns = now_ns(CLOCK_MONOTONIC);
                    (void) json_u64(buf, "flush_errors", &errs);
                    buf[strcspn(buf, "\n")] = 0;
                    snprintf(w->last, sizeof(w->last), "%s", buf);
                    if (errs > 0)
                        w->error = -EIO;
                    return NULL;
                }
            }
        }
        struct timespec ts = { 0, 2 * 1000000L };
        nanosleep(&ts, NULL); /* polling a file: there is nothing to wait on */
    }
}

/* ---- output ---- */

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
    return x < y ? -1 : x > y;
}

static double pct_us(const Lat *l, double q) {
    if (l->n == 0)
        return 0;
    size_t k = (size_t) ceil(q * (double) l->n);
    return (double) l->ns[CLAMP(k, (size_t) 1, l->n) - 1] / 1e3;
}

/* Histogram buckets: 4 per power of two of microseconds, upper bounds
 * 2^(k/4) us; only non-empty buckets are printed, as [upper_us, count]. */
static void print_lat(const Lat *l, bool last) {
    qsort(l->ns, l->n, sizeof(uint64_t), cmp_u64);
    printf("\"%s\":{\"n\":%zu,\"p50_us\":%.1f,\"p95_us\":%.1f,\"p99_us\":%.1f,\"max_us\":%.1f,\"hist\":[", l->name,
           l->n, pct_us(l, 0.50), pct_us(l, 0.95), pct_us(l, 0.99), l->n ? (double) l->ns[l->n - 1] / 1e3 : 0.0);
    size_t j = 0;
    bool first = true;
    for (int k = 0; j < l->n && k < 400; k++) {
        double upper = pow(2.0, k / 4.0);
        size_t c = 0;
        while (j < l->n && (double) l->ns[j] / 1e3 <= upper)
            j++, c++;
        if (c) {
            printf("%s[%.3f,%zu]", first ? "" : ",", upper, c);
            first = false;
        }
    }
    printf("]}%s", last ? "" : ",");
}

static void print_json_string(const char *s) {
    putchar('"');
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\')
            printf("\\%c", *s);
        else if ((unsigned char) *s < 0x20)
            printf("\\u%04x", *s);
        else
            putchar(*s);
    }
    putchar('"');
}

static void usage(FILE *f) {
    fprintf(f, "usage: flushscope-workload --dir DIR --files F --seed S --mode fuse|syncfs|fsync|buffered\n"
               "         [--stats-file PATH --daemon-pid PID] [--start-at REALTIME_NS] [--id NAME]\n"
               "         [--durable-timeout SEC] [--batch-records N] [--batch-ms MS]\n");
}

int main(int argc, char **argv) {
    static const struct option opts[] = {
        { "dir", required_argument, NULL, 'D' },      { "files", required_argument, NULL, 'F' },
        { "seed", required_argument, NULL, 'S' },     { "mode", required_argument, NULL, 'M' },
        { "stats-file", required_argument, NULL, 'T' }, { "daemon-pid", required_argument, NULL, 'P' },
        { "start-at", required_argument, NULL, 'A' }, { "id", required_argument, NULL, 'I' },
        { "durable-timeout", required_argument, NULL, 'O' }, { "help", no_argument, NULL, 'h' },
        { "batch-records", required_argument, NULL, 'B' }, { "batch-ms", required_argument, NULL, 'W' },
        {},
    };
    /* Batch defaults: layoutd-wsfs's (examples/wsfs/main.c). */
    Run r = { .mode = _MODE_INVALID, .n_files = 8000, .durable_timeout = 600, .root_fd = -EBADF, .id = "ws",
              .batch_records = 512, .batch_ms = 50,
              .lat_write = { .name = "write" }, .lat_read = { .name = "read" }, .lat_stat = { .name = "stat" } };
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
        switch (c) {
        case 'D': r.dir = optarg; break;
        case 'F': r.n_files = strtoull(optarg, NULL, 10); break;
        case 'S': r.seed = strtoull(optarg, NULL, 10); break;
        case 'M': r.mode = mode_from_string(optarg); break;
        case 'T': r.stats_file = optarg; break;
        case 'P': r.daemon_pid = (pid_t) strtol(optarg, NULL, 10); break;
        case 'A': r.start_at_ns = strtoull(optarg, NULL, 10); break;
        case 'I': r.id = optarg; break;
        case 'O': r.durable_timeout = strtod(optarg, NULL); break;
        case 'B': r.batch_records = strtoull(optarg, NULL, 10); break;
        case 'W': r.batch_ms = strtoull(optarg, NULL, 10); break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (!r.dir || r.mode < 0 || r.n_files < 10 || r.n_files > 10000000 || r.durable_timeout <= 0 ||
        r.batch_records < 1 || r.batch_records > 1000000 || r.batch_ms > 3600 * 1000 ||
        (r.mode == MODE_FUSE && (!r.stats_file) != (r.daemon_pid <= 0))) {
        usage(stderr);
        return 2;
    }

    /* Plan everything before the start, so the clock only sees the I/O. */
    uint64_t s = r.seed * UINT64_C(0x100000001b3) + 1;
    r.n_dirs = DIV_ROUND_UP(r.n_files, (uint64_t) FILES_PER_DIR);
    r.files = calloc(r.n_files, sizeof(File));
    r.dir_dirty = calloc(r.n_dirs, sizeof(bool));
    r.pattern = malloc(2 * CHUNK);
    r.buf = malloc(CHUNK);
    _cleanup_free_ size_t *p_read = NULL, *p_over = NULL, *p_ren = NULL, *p_del = NULL;
    if (!r.files || !r.dir_dirty || !r.pattern || !r.buf || permutation(s ^ 1, r.n_files, &p_read) < 0 ||
        permutation(s ^ 2, r.n_files, &p_over) < 0 || permutation(s ^ 3, r.n_files, &p_ren) < 0 ||
        permutation(s ^ 4, r.n_files, &p_del) < 0) {
        fprintf(stderr, "flushscope-workload: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < 2 * CHUNK; i += 8) {
        uint64_t v = rnd_next(&s);
        memcpy(r.pattern + i, &v, 8);
    }
    uint64_t planned_bytes = 0;
    for (size_t i = 0; i < r.n_files; i++) {
        r.files[i].size = draw_size(&s);
        r.files[i].dir = (uint32_t) (i % r.n_dirs);
        planned_bytes += r.files[i].size;
    }
    size_t n_over = r.n_files / 5, n_ren = r.n_files / 10, n_del = r.n_files * 3 / 10;

    r.root_fd = open(r.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (r.root_fd < 0) {
        fprintf(stderr, "flushscope-workload: %s: %m\n", r.dir);
        return 1;
    }
    if (r.mode == MODE_SYNCFS) {
        /* Started before the common start: its thread is not the run's. */
        int k = group_commit_start(r.root_fd, r.batch_records, r.batch_ms * 1000, &r.gc);
        if (k < 0) {
            fprintf(stderr, "flushscope-workload: starting the group commit: %s\n", strerror(-k));
            return 1;
        }
    }
    if (r.start_at_ns) {
        struct timespec ts = { (time_t) (r.start_at_ns / 1000000000ULL), (long) (r.start_at_ns % 1000000000ULL) };
        while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
    }
    r.t0 = now_ns(CLOCK_MONOTONIC);
    double ph[6] = {};
    uint64_t t = r.t0, t_accepted = 0, t_end = 0, walked_files = 0, walked_bytes = 0, expect_bytes = 0;
    int ret = 0;
    Watch w = { .run = &r };
    bool watching = false;

    /* 1. write: directories first (they are part of the phase). */
    for (uint32_t d = 0; ret >= 0 && d < r.n_dirs; d++) {
        char p[64];
        dir_of(&r, d, p, sizeof(p));
        if (d % LEAVES_PER_TOP == 0) {
            p[4] = 0;
            if (mkdirat(r.root_fd, p, 0755) < 0)
                ret = fail(&r, "mkdir %s: %m", p);
            record(&r);
            p[4] = '/';
        }
        if (ret >= 0 && mkdirat(r.root_fd, p, 0755) < 0)
            ret = fail(&r, "mkdir %s: %m", p);
        record(&r);
    }
    if (r.mode == MODE_FSYNC && ret >= 0) {
        /* The new top directories live in the root, the leaves in them. */
        _cleanup_close_ int fd = open(r.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || timed_fsync(&r, fd) < 0)
            ret = fail(&r, "fsync %s: %m", r.dir);
        for (uint32_t d = 0; ret >= 0 && d < r.n_dirs; d += LEAVES_PER_TOP) {
            char p[64];
            snprintf(p, sizeof(p), "t%03u", d / LEAVES_PER_TOP);
            _cleanup_close_ int tfd = openat(r.root_fd, p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (tfd < 0 || timed_fsync(&r, tfd) < 0)
                ret = fail(&r, "fsync %s: %m", p);
            r.dir_fsyncs++;
        }
    }
    for (size_t i = 0; ret >= 0 && i < r.n_files; i++)
        ret = write_file(&r, i, true);
    if (ret >= 0)
        ret = sync_dirs(&r);
    ph[0] = (double) (now_ns(CLOCK_MONOTONIC) - t) / 1e9;

    /* 2. read everything back, in a shuffled order. */
    t = now_ns(CLOCK_MONOTONIC);
    for (size_t k = 0; ret >= 0 && k < r.n_files; k++)
        ret = read_file(&r, p_read[k]);
    ph[1] = (double) (now_ns(CLOCK_MONOTONIC) - t) / 1e9;

    /* 3. overwrite 20 % with new content (a new generation, same size). */
    t = now_ns(CLOCK_MONOTONIC);
    for (size_t k = 0; ret >= 0 && k < n_over; k++) {
        r.files[p_over[k]].gen++;
        ret = write_file(&r, p_over[k], false);
    }
    ph[2] = (double) (now_ns(CLOCK_MONOTONIC) - t) / 1e9;

    /* 4. rename 10 % into another directory, under a new name. */
    t = now_ns(CLOCK_MONOTONIC);
    for (size_t k = 0; ret >= 0 && k < n_ren; k++) {
        size_t i = p_ren[k];
        char from[64], to[64];
        path_of(&r, i, from, sizeof(from));
        r.files[i].renamed = true;
        path_of(&r, i, to, sizeof(to));
        if (renameat(r.root_fd, from, r.root_fd, to) < 0)
            ret = fail(&r, "rename %s %s: %m", from, to);
        record(&r);
        r.dir_dirty[r.files[i].dir] = r.dir_dirty[(r.files[i].dir + 7) % r.n_dirs] = true;
    }
    if (ret >= 0)
        ret = sync_dirs(&r);
    ph[3] = (double) (now_ns(CLOCK_MONOTONIC) - t) / 1e9;

    /* 5. delete 30 %. */
    t = now_ns(CLOCK_MONOTONIC);
    for (size_t k = 0; ret >= 0 && k < n_del; k++) {
        size_t i = p_del[k];
        char p[64];
        path_of(&r, i, p, sizeof(p));
        if (unlinkat(r.root_fd, p, 0) < 0)
            ret = fail(&r, "unlink %s: %m", p);
        record(&r);
        r.files[i].deleted = true;
        r.dir_dirty[r.files[i].renamed ? (r.files[i].dir + 7) % r.n_dirs : r.files[i].dir] = true;
    }
    if (ret >= 0)
        ret = sync_dirs(&r);
    t_accepted = now_ns(CLOCK_MONOTONIC);
    ph[4] = (double) (t_accepted - t) / 1e9;

    /* The durable point is watched while the walk runs. */
    if (ret >= 0 && r.mode == MODE_FUSE && r.stats_file) {
        if (pthread_create(&w.thread, NULL, watch_thread, &w) != 0)
            ret = fail(&r, "pthread_create failed");
        else
            watching = true;
    }

    /* 6. walk and lstat what is left; check it is what should be left. */
    t = now_ns(CLOCK_MONOTONIC);
    if (ret >= 0)
        ret = walk(&r, r.root_fd, ".", &walked_files, &walked_bytes, 0);
    t_end = now_ns(CLOCK_MONOTONIC);
    ph[5] = (double) (t_end - t) / 1e9;
    for (size_t i = 0; i < r.n_files; i++)
        if (!r.files[i].deleted)
            expect_bytes += r.files[i].size;
    if (ret >= 0 && (walked_files != r.n_files - n_del || walked_bytes != expect_bytes))
        ret = fail(&r, "walk found %" PRIu64 " files / %" PRIu64 " bytes, expected %zu / %" PRIu64, walked_files,
                   walked_bytes, (size_t) (r.n_files - n_del), expect_bytes);
    /* syncfs: the last batch commits while the walk runs, on its own
     * deadline; wait for it (the walk added no records). */
    uint64_t gc_durable_ns = 0;
    GroupCommitStats gcs = {};
    if (r.gc) {
        int k = group_commit_wait(r.gc, (uint64_t) (r.durable_timeout * 1e9), &gc_durable_ns);
        if (k < 0 && ret >= 0)
            ret = fail(&r, "waiting for the group commit: %s", strerror(-k));
        if (k >= 0 && gc_durable_ns == 0)
            gc_durable_ns = t_accepted; /* no record at all: nothing to wait for */
        group_commit_get_stats(r.gc, &gcs);
        r.gc = group_commit_stop(r.gc);
    }
    if (watching) {
        pthread_join(w.thread, NULL);
        if (w.error < 0)
            ret = fail(&r, "waiting for the daemon to commit: %s%s%s", strerror(-w.error), w.last[0] ? ": " : "",
                       w.last);
    }

    double accepted = since_start(&r, t_accepted), end = since_start(&r, t_end);
    bool durable = r.mode == MODE_FSYNC || (r.mode == MODE_SYNCFS && gc_durable_ns && ret >= 0) ||
                   (r.mode == MODE_FUSE && watching && w.durable_ns);
    double durable_s = r.mode == MODE_FSYNC    ? accepted
                       : !durable              ? NAN
                       : r.mode == MODE_SYNCFS ? since_start(&r, MAX(gc_durable_ns, r.t0))
                                               : since_start(&r, w.durable_ns);

    printf("{\"id\":");
    print_json_string(r.id);
    printf(",\"mode\":\"%s\",\"seed\":%" PRIu64 ",\"files\":%" PRIu64 ",\"dirs\":%" PRIu64
           ",\"planned_bytes\":%" PRIu64 ",\"bytes_written\":%" PRIu64 ",\"bytes_read\":%" PRIu64
           ",\"file_fsyncs\":%" PRIu64 ",\"dir_fsyncs\":%" PRIu64 ",",
           mode_to_string(r.mode), r.seed, r.n_files, r.n_dirs, planned_bytes, r.bytes_written, r.bytes_read,
           r.file_fsyncs, r.dir_fsyncs);
    printf("\"phases\":{\"write\":%.6f,\"read\":%.6f,\"overwrite\":%.6f,\"rename\":%.6f,\"delete\":%.6f,"
           "\"walk\":%.6f},",
           ph[0], ph[1], ph[2], ph[3], ph[4], ph[5]);
    printf("\"accepted_s\":%.6f,\"end_s\":%.6f,\"durable\":%s,", accepted, end, durable ? "true" : "false");
    if (durable)
        printf("\"durable_s\":%.6f,\"completed_s\":%.6f,", durable_s, MAX(end, durable_s));
    else
        printf("\"durable_s\":null,\"completed_s\":%.6f,", end);
    if (watching)
        printf("\"watch\":{\"polls\":%" PRIu64 ",\"signals\":%" PRIu64 ",\"stats\":%s},", w.polls, w.signals,
               w.last[0] ? w.last : "null");
    if (r.mode == MODE_SYNCFS)
        printf("\"commit\":{\"commit\":\"syncfs\",\"batch_records\":%" PRIu64 ",\"batch_ms\":%" PRIu64
               ",\"records\":%" PRIu64 ",\"records_committed\":%" PRIu64 ",\"batches\":%" PRIu64
               ",\"flushes\":%" PRIu64 ",\"flush_us\":%" PRIu64 ",\"flush_errors\":%" PRIu64 "},",
               r.batch_records, r.batch_ms, gcs.records, gcs.records_committed, gcs.batches, gcs.flushes,
               gcs.flush_ns / 1000, gcs.flush_errors);
    if (r.mode == MODE_FSYNC)
        printf("\"fsync_us\":%" PRIu64 ",", r.fsync_ns / 1000);
    /* CPU of this process (the workload side, its committer thread
     * included; the daemon's is read by the driver). */
    struct rusage ru = {};
    (void) getrusage(RUSAGE_SELF, &ru);
    printf("\"cpu_user_s\":%.3f,\"cpu_sys_s\":%.3f,", ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
           ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
    printf("\"lat\":{");
    print_lat(&r.lat_write, false);
    print_lat(&r.lat_read, false);
    print_lat(&r.lat_stat, true);
    printf("},\"ok\":%s,\"error\":", ret >= 0 ? "true" : "false");
    if (ret >= 0)
        printf("null");
    else
        print_json_string(r.error);
    printf("}\n");
    fflush(stdout);
    if (ret < 0)
        fprintf(stderr, "flushscope-workload %s: %s\n", r.id, r.error);

    safe_close(r.root_fd);
    free(r.files);
    free(r.dir_dirty);
    free(r.pattern);
    free(r.buf);
    free(r.lat_write.ns);
    free(r.lat_read.ns);
    free(r.lat_stat.ns);
    return ret >= 0 ? 0 : 1;
}
