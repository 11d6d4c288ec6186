/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `layoutd-wsfs fsck`: lists every stub whose object is not in the pool.
 *
 *   layoutd-wsfs fsck --content DIR[,DIR...] --state-root DIR [--state-root DIR...]
 *                     [--lock-timeout DURATION] [--json]
 *
 * It walks the state roots as gc does (the daemons' state dirs, kept
 * data), reads each regular file's user.wsfs.cas, and looks the object up
 * in its shard (objects/H[0:2]/H) and in the sweeper's trash (an object
 * there is put back by the next daemon that opens it, or by gc: counted,
 * not missing). It changes nothing: no object is moved, no reference
 * dropped, no file opened for writing (gc.lock is created if it is not
 * there yet, as every daemon and gc does).
 *
 * Against a concurrent gc and daemons: the walk takes no lock (it would
 * stall the sweeper for as long as it runs). A stub found without its
 * object is checked again with the pool lock held shared, as publishers
 * hold it: the sweeper cannot be quarantining meanwhile, and it only ever
 * quarantines objects nobody references; a publisher references an object
 * only after it is in place. So a stub that still exists (a link left),
 * still names the object, and whose object is in neither place while we
 * hold the lock really is without its object; one deleted, copied up or
 * rewritten since the walk read it is not reported.
 *
 * For each missing one: its path, digest, size, the bytes it still
 * allocates, and what its own data is:
 *   whole    it carries user.wsfs.whole: never punched (a crash before its
 *            object was durable); the daemon serves its own data if it
 *            hashes to the digest, and the file becomes ordinary;
 *   punched  no marker and fewer bytes allocated than its size: the data
 *            is only in the object; reads give EIO until it is restored;
 *   unknown  no marker but fully allocated (a stub of an older daemon
 *            that was never punched): the daemon answers EIO; the data
 *            may still be in the state dir's file.
 *
 * Exit status: 0 every stub has its object; 1 at least one has not (listed);
 * 2 usage (or a --content / --state-root that cannot be opened);
 * 3 the check is incomplete (entries that could not be read, or the lock
 * could not be had) and found nothing missing in what it could check.
 */
#include <fcntl.h>
#include <limits.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>

#include "wsfs.h"

#define EXIT_USAGE 2
#define EXIT_INCOMPLETE 3

typedef struct Missing {
    char *path;
    char hex[WSFS_HEX_LEN + 1];
    uint64_t size, allocated;
    const char *own_data;
} Missing;

typedef struct Fsck {
    Walker walker;
    char **content;
    size_t n_shards;
    char **roots;
    size_t n_roots;
    uint64_t lock_timeout_s;
    bool json;

    CasPool pool; /* only the fds cas_object_state() needs */
    int lock_fd;
    const char *root; /* the root being walked */
    DigestSet present, missing_objects, seen;
    Missing *missing;
    size_t n_missing, cap_missing;
    Missing *twice;           /* whole while the pool has their object */
    size_t n_twice, cap_twice;
    uint64_t twice_bytes;
    uint64_t stubs, rechecked, whole, punched, unknown, in_trash, lock_wait_ms;
    char error[600];
} Fsck;

_printf_(2, 3) static int fsck_fail(Fsck *f, const char *fmt, ...) {
    va_list ap;
    if (!f->error[0]) {
        va_start(ap, fmt);
        vsnprintf(f->error, sizeof(f->error), fmt, ap);
        va_end(ap);
    }
    return -EIO;
}

static char *join_path(const char *root, const char *rel, const char *name) {
    char *p;
    if (asprintf(&p, "%s/%s%s%s", root, rel, rel[0] ? "/" : "", name) < 0)
        return NULL;
    return p;
}

/* The stub (dir_fd/name) names hex, whose object was in neither place:
 * look again with the pool lock held shared. */
static int confirm(Fsck *f, int dir_fd, const char *rel, const char *name, const char *hex) {
    char val[WSFS_HEX_LEN + 1], marker[8];
    struct stat st;
    Digest d;

    _cleanup_close_ int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOATIME | O_CLOEXEC);
    if (fd < 0 && errno == EPERM)
        fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0; /* deleted since: it references nothing */
        f->walker.errors++;
        fsck_fail(f, "%s/%s%s%s: %m", f->root, rel, rel[0] ? "/" : "", name);
        return 0;
    }
    int r = cli_flock_timeout(f->lock_fd, LOCK_SH, f->lock_timeout_s, &f->lock_wait_ms);
    if (r < 0) {
        if (r == -ETIMEDOUT)
            fsck_fail(f, "the pool stayed locked for %" PRIu64 " s (gc.lock held exclusively)", f->lock_timeout_s);
        else
            fsck_fail(f, "locking gc.lock: %s", strerror(-r));
        return -EIO;
    }
    f->rechecked++;
    ssize_t n = fgetxattr(fd, WSFS_XATTR_CAS, val, WSFS_HEX_LEN);
    int state = 0;
    bool still = n == WSFS_HEX_LEN && fstat(fd, &st) == 0 && st.st_nlink > 0;
    if (still) {
        val[n] = 0;
        still = streq(val, hex);
    }
    if (still)
        state = cas_object_state(&f->pool, hex);
    bool whole = still && fgetxattr(fd, WSFS_XATTR_WHOLE, marker, sizeof(marker)) >= 0;
    (void) flock(f->lock_fd, LOCK_UN);
    if (!still)
        return 0;
    if (state < 0) {
        f->walker.errors++;
        fsck_fail(f, "looking up object %s: %s", hex, strerror(-state));
        return 0;
    }
    if (!digest_from_hex(hex, &d))
        return 0;
    if (state == 1)
        return digest_set_add(&f->present, &d) < 0 ? -ENOMEM : 0;
    if (state == 2) {
        f->in_trash++;
        return 0;
    }
    if (f->n_missing == f->cap_missing) {
        size_t cap = f->cap_missing * 2 + 16;
        Missing *m = reallocarray(f->missing, cap, sizeof(Missing));
        if (!m)
            return -ENOMEM;
        f->missing = m;
        f->cap_missing = cap;
    }
    Missing *m = &f->missing[f->n_missing];
    *m = (Missing) { .size = st.st_size, .allocated = (uint64_t) st.st_blocks * 512 };
    if (!(m->path = join_path(f->root, rel, name)))
        return -ENOMEM;
    memcpy(m->hex, hex, sizeof(m->hex));
    if (whole) {
        m->own_data = "whole";
        f->whole++;
    } else if (m->allocated < m->size) {
        m->own_data = "punched";
        f->punched++;
    } else {
        m->own_data = "unknown";
        f->unknown++;
    }
    f->n_missing++;
    return digest_set_add(&f->missing_objects, &d) < 0 ? -ENOMEM : 0;
}

/* A stub that still holds its whole data while the pool has its object
 * (issue 35.3): its bytes are held twice until the daemon punches it. */
static int note_twice(Fsck *f, const char *rel, const char *name, const char *hex, const struct stat *st) {
    if (f->n_twice == f->cap_twice) {
        size_t cap = f->cap_twice * 2 + 16;
        Missing *m = reallocarray(f->twice, cap, sizeof(Missing));
        if (!m)
            return -ENOMEM;
        f->twice = m;
        f->cap_twice = cap;
    }
    Missing *m = &f->twice[f->n_twice];
    *m = (Missing) { .size = st->st_size, .allocated = (uint64_t) st->st_blocks * 512, .own_data = "whole" };
    if (!(m->path = join_path(f->root, rel, name)))
        return -ENOMEM;
    memcpy(m->hex, hex, sizeof(m->hex));
    f->n_twice++;
    f->twice_bytes += m->allocated;
    return 0;
}

static int check_file(Walker *w, int dir_fd, const char *rel, const char *name, const struct stat *st) {
    Fsck *f = (Fsck *) w;
    char val[WSFS_HEX_LEN + 1], path[PATH_MAX];
    Digest d;

    if (snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", dir_fd, name) >= (int) sizeof(path))
        return 0;
    ssize_t n = lgetxattr(path, WSFS_XATTR_CAS, val, WSFS_HEX_LEN);
    if (n < 0) {
        if (errno != ENODATA && errno != ENOTSUP && errno != ENOENT) {
            w->errors++;
            fsck_fail(f, "%s/%s%s%s: reading %s: %m", f->root, rel, rel[0] ? "/" : "", name, WSFS_XATTR_CAS);
        }
        return 0;
    }
    if (n != WSFS_HEX_LEN)
        return 0;
    val[n] = 0;
    if (!digest_from_hex(val, &d))
        return 0;
    f->stubs++;
    if (digest_set_add(&f->seen, &d) < 0)
        return -ENOMEM;
    bool whole = st->st_size > 0 && (uint64_t) st->st_blocks * 512 >= (uint64_t) st->st_size &&
                 lgetxattr(path, WSFS_XATTR_WHOLE, NULL, 0) >= 0;
    if (digest_set_has(&f->present, &d))
        return whole ? note_twice(f, rel, name, val, st) : 0;
    int state = cas_object_state(&f->pool, val);
    if (state < 0) {
        w->errors++;
        fsck_fail(f, "looking up object %s: %s", val, strerror(-state));
        return 0;
    }
    if (state == 1) {
        if (digest_set_add(&f->present, &d) < 0)
            return -ENOMEM;
        return whole ? note_twice(f, rel, name, val, st) : 0;
    }
    return confirm(f, dir_fd, rel, name, val);
}

static void print_result(Fsck *f, bool ok, int64_t duration_ms) {
    if (f->json) {
        printf("{\"ok\":%s,\"stubs_checked\":%" PRIu64 ",\"objects_checked\":%zu,\"stubs_missing\":%zu"
               ",\"objects_missing\":%zu,\"missing_whole\":%" PRIu64 ",\"missing_punched\":%" PRIu64
               ",\"missing_unknown\":%" PRIu64 ",\"in_trash\":%" PRIu64 ",\"rechecked\":%" PRIu64 ",\"dirs_scanned\":%" PRIu64
               ",\"errors\":%" PRIu64 ",\"lock_wait_ms\":%" PRIu64 ",\"duration_ms\":%" PRId64 ",\"error\":",
               ok ? "true" : "false", f->stubs, f->seen.n, f->n_missing, f->missing_objects.n, f->whole,
               f->punched, f->unknown, f->in_trash, f->rechecked, f->walker.dirs, f->walker.errors, f->lock_wait_ms,
               duration_ms);
        if (f->error[0])
            cli_json_string(stdout, f->error);
        else
            fputs("null", stdout);
        fputs(",\"missing\":[", stdout);
        for (size_t i = 0; i < f->n_missing; i++) {
            Missing *m = &f->missing[i];
            fputs(i ? ",{\"path\":" : "{\"path\":", stdout);
            cli_json_string(stdout, m->path);
            printf(",\"digest\":\"%s\",\"size\":%" PRIu64 ",\"allocated\":%" PRIu64 ",\"own_data\":\"%s\"}",
                   m->hex, m->size, m->allocated, m->own_data);
        }
        printf("],\"held_twice\":%zu,\"held_twice_bytes\":%" PRIu64 ",\"twice\":[", f->n_twice, f->twice_bytes);
        for (size_t i = 0; i < f->n_twice; i++) {
            Missing *m = &f->twice[i];
            fputs(i ? ",{\"path\":" : "{\"path\":", stdout);
            cli_json_string(stdout, m->path);
            printf(",\"digest\":\"%s\",\"size\":%" PRIu64 ",\"allocated\":%" PRIu64 "}", m->hex, m->size,
                   m->allocated);
        }
        fputs("]}\n", stdout);
    } else {
        for (size_t i = 0; i < f->n_missing; i++) {
            Missing *m = &f->missing[i];
            printf("missing %s %" PRIu64 " %s ", m->hex, m->size, m->own_data);
            cli_json_string(stdout, m->path);
            fputc('\n', stdout);
        }
        for (size_t i = 0; i < f->n_twice; i++) {
            Missing *m = &f->twice[i];
            printf("twice %s %" PRIu64 " ", m->hex, m->allocated);
            cli_json_string(stdout, m->path);
            fputc('\n', stdout);
        }
        if (f->n_twice > 0)
            printf("%zu stubs hold their whole data beside their object (%" PRIu64 " bytes twice; their daemon "
                   "punches them)\n", f->n_twice, f->twice_bytes);
        printf("%s%" PRIu64 " stubs checked (%zu objects): %zu without their object (%zu objects; %" PRIu64
               " whole, %" PRIu64 " punched, %" PRIu64 " unknown), %" PRIu64 " in the trash, %" PRIu64
               " errors, %" PRId64 " ms\n",
               ok ? "" : "incomplete: ", f->stubs, f->seen.n, f->n_missing, f->missing_objects.n, f->whole,
               f->punched, f->unknown, f->in_trash, f->walker.errors, duration_ms);
    }
    fflush(stdout);
}

static void fsck_free(Fsck *f) {
    for (size_t s = 0; s < f->pool.n_shards; s++) {
        safe_close(f->pool.objects_fds[s]);
        safe_close(f->pool.dir_fds[s]);
    }
    free(f->pool.objects_fds);
    free(f->pool.dir_fds);
    safe_close(f->lock_fd);
    digest_set_done(&f->present);
    digest_set_done(&f->missing_objects);
    digest_set_done(&f->seen);
    for (size_t i = 0; i < f->n_missing; i++)
        free(f->missing[i].path);
    free(f->missing);
    for (size_t i = 0; i < f->n_twice; i++)
        free(f->twice[i].path);
    free(f->twice);
    cli_free_list(f->content, f->n_shards);
    cli_free_list(f->roots, f->n_roots);
}

static void fsck_usage(FILE *out) {
    fprintf(out,
            "usage: layoutd-wsfs fsck --content DIR[,DIR...] --state-root DIR [--state-root DIR...] [options]\n"
            "  --content DIR[,DIR...]   the pool's dirs, in shard order (as the daemons take them)\n"
            "  --state-root DIR         a dir whose files may be stubs (as for gc); repeat for each\n"
            "  --lock-timeout DURATION  give up if the pool lock cannot be had (default 60s)\n"
            "  --json                   one JSON line on stdout (see README)\n"
            "exit status: 0 nothing missing, 1 stubs without their object, 2 usage, 3 incomplete\n");
}

static int64_t mono_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t) t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

#define FSCK_BAD(...) \
    ({ fprintf(stderr, "layoutd-wsfs fsck: " __VA_ARGS__); fputc('\n', stderr); fsck_free(&f); EXIT_USAGE; })

int fsck_main(int argc, char **argv) {
    enum { O_CONTENT = 256, O_ROOT, O_LOCKTO, O_JSON, O_HELP };
    static const struct option opts[] = {
        { "content", required_argument, NULL, O_CONTENT },
        { "state-root", required_argument, NULL, O_ROOT },
        { "lock-timeout", required_argument, NULL, O_LOCKTO },
        { "json", no_argument, NULL, O_JSON },
        { "help", no_argument, NULL, O_HELP },
        {},
    };
    Fsck f = { .walker = { .file = check_file }, .lock_timeout_s = 60, .lock_fd = -EBADF };
    int64_t t0 = mono_ms();
    int c, r = 0;

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
        switch (c) {
        case O_CONTENT:
            if (cli_split_list(&f.content, &f.n_shards, optarg) < 0)
                return FSCK_BAD("out of memory");
            break;
        case O_ROOT:
            if (cli_split_list(&f.roots, &f.n_roots, optarg) < 0)
                return FSCK_BAD("out of memory");
            break;
        case O_LOCKTO:
            if (cli_parse_duration(optarg, &f.lock_timeout_s) < 0)
                return FSCK_BAD("--lock-timeout: '%s' is not a duration", optarg);
            break;
        case O_JSON:
            f.json = true;
            break;
        case 'h':
        case O_HELP:
            fsck_usage(stdout);
            fsck_free(&f);
            return EXIT_SUCCESS;
        default:
            fsck_usage(stderr);
            fsck_free(&f);
            return EXIT_USAGE;
        }
    }
    if (optind != argc)
        return FSCK_BAD("unexpected argument '%s'", argv[optind]);
    if (f.n_shards == 0)
        return FSCK_BAD("--content DIR[,DIR...] is required");
    if (f.n_roots == 0)
        return FSCK_BAD("--state-root DIR is required (at least one; every dir that may hold stubs)");

    f.pool.objects_fds = calloc(f.n_shards, sizeof(int));
    f.pool.dir_fds = calloc(f.n_shards, sizeof(int));
    if (!f.pool.objects_fds || !f.pool.dir_fds)
        return FSCK_BAD("out of memory");
    f.pool.n_shards = f.n_shards;
    for (size_t s = 0; s < f.n_shards; s++)
        f.pool.objects_fds[s] = f.pool.dir_fds[s] = -EBADF;
    for (size_t s = 0; s < f.n_shards; s++) {
        f.pool.dir_fds[s] = open(f.content[s], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (f.pool.dir_fds[s] < 0)
            return FSCK_BAD("--content %s: %m", f.content[s]);
        /* Not created: a dir without objects/ is not a pool (fsck makes none). */
        f.pool.objects_fds[s] = openat(f.pool.dir_fds[s], "objects", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (f.pool.objects_fds[s] < 0)
            return FSCK_BAD("--content %s: no objects/ (not a content pool?): %m", f.content[s]);
    }
    f.lock_fd = openat(f.pool.dir_fds[0], "gc.lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (f.lock_fd < 0)
        return FSCK_BAD("%s/gc.lock: %m", f.content[0]);
    int *root_fds = calloc(f.n_roots, sizeof(int));
    if (!root_fds)
        return FSCK_BAD("out of memory");
    for (size_t i = 0; i < f.n_roots; i++)
        if ((root_fds[i] = open(f.roots[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
            fprintf(stderr, "layoutd-wsfs fsck: --state-root %s: %m\n", f.roots[i]);
            for (size_t j = 0; j < i; j++)
                safe_close(root_fds[j]);
            free(root_fds);
            fsck_free(&f);
            return EXIT_USAGE;
        }

    for (size_t i = 0; i < f.n_roots && r >= 0; i++) {
        f.root = f.roots[i];
        r = walk_files(&f.walker, root_fds[i]);
        if (!f.error[0] && f.walker.first_error[0])
            fsck_fail(&f, "%s/%s", f.roots[i], f.walker.first_error);
        if (r == -ENOMEM)
            fsck_fail(&f, "out of memory");
        else if (r < 0 && !f.error[0])
            fsck_fail(&f, "--state-root %s: %s", f.roots[i], strerror(-r));
    }
    for (size_t i = 0; i < f.n_roots; i++)
        safe_close(root_fds[i]);
    free(root_fds);

    bool ok = r >= 0 && f.walker.errors == 0 && !f.error[0];
    print_result(&f, ok, mono_ms() - t0);
    if (!ok)
        fprintf(stderr, "layoutd-wsfs fsck: %s\n", f.error);
    int ret = f.n_missing > 0 ? EXIT_FAILURE : ok ? EXIT_SUCCESS : EXIT_INCOMPLETE;
    fsck_free(&f);
    return ret;
}
