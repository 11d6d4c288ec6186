/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `layoutd-wsfs gc`: the content pool's sweeper. It deletes the objects
 * that no stub references any more, and never one that a stub references
 * or that a running daemon is about to reference.
 *
 *   layoutd-wsfs gc --content DIR[,DIR...] --state-root DIR [--state-root DIR...]
 *                   [--grace DURATION] [--lock-timeout DURATION] [--dry-run] [--json]
 *
 * The protocol (README "Content-pool garbage collection"):
 *
 *   Writers (the daemons). A reference is a stub's xattr user.wsfs.cas.
 *   A daemon holds the pool lock (<dir[0]>/gc.lock) shared while it
 *   publishes an object and sets the xattr that references it, and while
 *   it renames or links anything (a rename may move stubs between
 *   directories). A dedup hit freshens the object's mtime before the
 *   reference is made; a new object is new. So, under the lock held
 *   exclusively, nobody adds a reference, and every reference added since
 *   time T is to an object with mtime >= T.
 *
 *   1. List the objects of every shard with their mtimes. Candidates:
 *      mtime older than now - grace. (No lock: publishing goes on.)
 *   2. Walk every state root, collecting the digests stubs reference.
 *      Each directory's ctime is read before its entries. (No lock: a
 *      rename during the walk can move a stub from a directory not yet
 *      read into one already read; step 3 catches it.)
 *   3. Take the lock exclusively. Walk again, but read only the
 *      directories whose ctime changed since step 2 (or was too recent to
 *      trust on a coarse clock), and new ones: any entry moved in since
 *      is seen. While we hold the lock, no rename, link or reference can
 *      happen, so the set is now complete. Re-stat every candidate: one
 *      freshened meanwhile is young, and stays. Rename each remaining
 *      candidate to <dir>/trash/H (same filesystem). Release the lock.
 *   4. Unlink what is in the trash.
 *
 *   Failure: any error while walking a state root (EACCES, EIO, a root
 *   missing) fails the run before step 3: a reference not seen could be
 *   an object lost. kill -9 anywhere: before step 3 nothing changed; in or
 *   after it, the trash holds objects that were unreferenced while we held
 *   the lock. The next run takes whatever is in the trash at its step 3:
 *   referenced (by a stub the protocol could not see, e.g. one a daemon of
 *   an older version made) -> restored; else unlinked. A daemon that opens
 *   a stub whose object is in the trash puts it back itself (cas.c), so
 *   even a broken protocol loses nothing it could have found.
 *
 * Why this and not the peers' ways alone: git's prune relies on the grace
 * period only, and gitaly lost objects being written when it pruned
 * without it (MR 4416); restic's exclusive lock is only as good as lock
 * hygiene (a stale lock removed by hand destroyed data), so ours is a
 * flock, released by the kernel when its holder dies; Nix's GC has a
 * documented race between reading a link count and a new link, which is
 * why links and renames here are taken under the lock; ostree's writers
 * hold the repo lock shared, prune exclusive, as ours do.
 *
 * Output: one line, JSON with --json (keys in the README), else text.
 * Exit status: 0 done, 1 failed (nothing deleted if it failed before the
 * delete phase), 2 usage.
 */
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>

#include "wsfs.h"

#define EXIT_USAGE 2
#define RECENT_NS (50 * 1000 * 1000LL) /* a ctime this close to our read may hide a change */

typedef struct Object {
    Digest d;
    size_t shard;
    struct timespec mtime;
    uint64_t bytes; /* allocated */
    bool young, referenced, in_trash;
} Object;

/* A directory read in step 2: its identity, ctime, and subdirectories. */
typedef struct DirRec {
    dev_t dev;
    ino_t ino;
    struct timespec ctime;
    bool recent;
} DirRec;

typedef struct Gc {
    char **content;
    size_t n_shards;
    char **roots;
    size_t n_roots;
    uint64_t grace_s, lock_timeout_s;
    bool dry_run, json;
    long stop_after; /* test hook: pause after quarantining this many */

    int *dir_fds, *objects_fds, *trash_fds;
    Object *objects;
    size_t n_objects, cap_objects;
    DigestSet refs;
    DirRec *dirs;
    size_t n_dirs, cap_dirs;
    struct timespec cutoff;

    /* counters */
    uint64_t scanned, referenced, young, swept, bytes_freed, tmp_swept, quarantined, restored, stubs,
             dirs_scanned, dirs_rescanned, errors, lock_wait_ms, lock_held_ms;
    char error[512];
} Gc;

static int64_t ts_ns(struct timespec t) {
    return (int64_t) t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int64_t now_ns(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return ts_ns(t);
}

_printf_(2, 3) static int gc_fail(Gc *g, const char *fmt, ...) {
    va_list ap;
    if (!g->error[0]) {
        va_start(ap, fmt);
        vsnprintf(g->error, sizeof(g->error), fmt, ap);
        va_end(ap);
    }
    return -EIO;
}

static bool grow(void **p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap)
        return true;
    size_t n = MAX(need, *cap * 2 + 64);
    void *q = reallocarray(*p, n, size);
    if (!q)
        return false;
    *p = q;
    *cap = n;
    return true;
}

/* ---- step 1: the objects ---- */

static bool older(struct timespec a, struct timespec b) {
    return ts_ns(a) < ts_ns(b);
}

static int list_objects(Gc *g) {
    for (size_t s = 0; s < g->n_shards; s++) {
        _cleanup_close_ int dup1 = fcntl(g->objects_fds[s], F_DUPFD_CLOEXEC, 3);
        DIR *top = dup1 >= 0 ? fdopendir(dup1) : NULL;
        if (!top)
            return gc_fail(g, "%s/objects: %m", g->content[s]);
        dup1 = -EBADF;
        rewinddir(top);
        for (struct dirent *e; (errno = 0, e = readdir(top));) {
            struct stat st;
            if (strncmp(e->d_name, ".tmp.", 5) == 0) {
                /* A publisher's copy: a crash leaves one behind. Live
                 * ones are young. */
                if (fstatat(g->objects_fds[s], e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                    older(st.st_mtim, g->cutoff) && !g->dry_run && unlinkat(g->objects_fds[s], e->d_name, 0) == 0)
                    g->tmp_swept++;
                continue;
            }
            if (strlen(e->d_name) != 2)
                continue;
            if (e->d_type == DT_UNKNOWN) {
                /* Some filesystems do not fill d_type: ask, rather than
                 * skip a whole shard and sweep nothing in it. */
                if (fstatat(g->objects_fds[s], e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
                    continue;
            } else if (e->d_type != DT_DIR)
                continue;
            _cleanup_close_ int sub = openat(g->objects_fds[s], e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            DIR *d = sub >= 0 ? fdopendir(sub) : NULL;
            if (!d) {
                closedir(top);
                return gc_fail(g, "%s/objects/%s: %m", g->content[s], e->d_name);
            }
            int dfd = TAKE_FD(sub);
            for (struct dirent *o; (errno = 0, o = readdir(d));) {
                Digest dg;
                if (o->d_name[0] == '.') {
                    if (strncmp(o->d_name, ".tmp.", 5) == 0 && fstatat(dfd, o->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                        older(st.st_mtim, g->cutoff) && !g->dry_run && unlinkat(dfd, o->d_name, 0) == 0)
                        g->tmp_swept++;
                    continue;
                }
                if (!digest_from_hex(o->d_name, &dg) || fstatat(dfd, o->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                    !S_ISREG(st.st_mode))
                    continue;
                if (!grow((void **) &g->objects, &g->cap_objects, g->n_objects + 1, sizeof(Object))) {
                    closedir(d);
                    closedir(top);
                    return gc_fail(g, "out of memory");
                }
                g->objects[g->n_objects++] = (Object) { .d = dg, .shard = s, .mtime = st.st_mtim,
                                                        .bytes = (uint64_t) st.st_blocks * 512,
                                                        .young = !older(st.st_mtim, g->cutoff) };
                g->scanned++;
            }
            closedir(d);
        }
        closedir(top);
    }
    return 0;
}

/* ---- steps 2 and 3: the references ---- */

static DirRec *dir_find(Gc *g, dev_t dev, ino_t ino) {
    /* Linear per lookup would be quadratic; dirs are few compared to
     * files, but keep it sane: the records are sorted in step 3. */
    size_t lo = 0, hi = g->n_dirs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        DirRec *r = &g->dirs[mid];
        if (r->dev == dev && r->ino == ino)
            return r;
        if (r->dev < dev || (r->dev == dev && r->ino < ino))
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static int dirrec_cmp(const void *a, const void *b) {
    const DirRec *x = a, *y = b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* Reads one directory (fd, consumed) and recurses. verify: step 3 (the
 * records are sorted; unchanged directories are only descended). */
static int walk(Gc *g, int fd, const char *path, bool verify, int depth) {
    struct stat st;
    if (depth > 4096) {
        safe_close(fd);
        return gc_fail(g, "%s: too deep", path);
    }
    if (fstat(fd, &st) < 0) {
        safe_close(fd);
        return gc_fail(g, "%s: %m", path);
    }
    int64_t seen_at = now_ns(CLOCK_REALTIME);
    bool read_files = true;
    if (verify) {
        DirRec *r = dir_find(g, st.st_dev, st.st_ino);
        /* Unchanged since step 2 (and its ctime not too fresh to trust):
         * its entries are as we read them; only its subdirs may differ. */
        if (r && ts_ns(r->ctime) == ts_ns(st.st_ctim) && !r->recent)
            read_files = false;
        else
            g->dirs_rescanned++;
    } else {
        if (!grow((void **) &g->dirs, &g->cap_dirs, g->n_dirs + 1, sizeof(DirRec))) {
            safe_close(fd);
            return gc_fail(g, "out of memory");
        }
        g->dirs[g->n_dirs++] = (DirRec) { st.st_dev, st.st_ino, st.st_ctim,
                                          seen_at - ts_ns(st.st_ctim) < RECENT_NS };
        g->dirs_scanned++;
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        safe_close(fd);
        return gc_fail(g, "%s: %m", path);
    }
    int r = 0;
    for (struct dirent *e; (errno = 0, e = readdir(d));) {
        if (streq(e->d_name, ".") || streq(e->d_name, ".."))
            continue;
        unsigned char type = e->d_type;
        if (type == DT_UNKNOWN) {
            struct stat es;
            if (fstatat(dirfd(d), e->d_name, &es, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno == ENOENT)
                    continue;
                r = gc_fail(g, "%s/%s: %m", path, e->d_name);
                break;
            }
            type = S_ISDIR(es.st_mode) ? DT_DIR : S_ISREG(es.st_mode) ? DT_REG : DT_UNKNOWN;
        }
        if (type == DT_DIR) {
            int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0) {
                if (errno == ENOENT) /* removed meanwhile: it references nothing now */
                    continue;
                r = gc_fail(g, "%s/%s: %m", path, e->d_name);
                break;
            }
            _cleanup_free_ char *p = NULL;
            if (asprintf(&p, "%s/%s", path, e->d_name) < 0) {
                safe_close(sub);
                r = gc_fail(g, "out of memory");
                break;
            }
            if ((r = walk(g, sub, p, verify, depth + 1)) < 0)
                break;
        } else if (type == DT_REG && read_files) {
            char val[WSFS_HEX_LEN + 1];
            Digest dg;
            _cleanup_close_ int f = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOATIME);
            if (f < 0 && errno == EPERM)
                f = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
            if (f < 0) {
                if (errno == ENOENT)
                    continue;
                r = gc_fail(g, "%s/%s: %m", path, e->d_name);
                break;
            }
            ssize_t n = fgetxattr(f, WSFS_XATTR_CAS, val, WSFS_HEX_LEN);
            if (n < 0 && errno != ENODATA && errno != ENOTSUP) {
                r = gc_fail(g, "%s/%s: reading %s: %m", path, e->d_name, WSFS_XATTR_CAS);
                break;
            }
            if (n != WSFS_HEX_LEN)
                continue;
            val[n] = 0;
            if (!digest_from_hex(val, &dg))
                continue;
            g->stubs++;
            if (digest_set_add(&g->refs, &dg) < 0) {
                r = gc_fail(g, "out of memory");
                break;
            }
        }
    }
    if (r >= 0 && errno != 0)
        r = gc_fail(g, "%s: reading: %m", path);
    closedir(d);
    return r;
}

static int walk_roots(Gc *g, bool verify) {
    for (size_t i = 0; i < g->n_roots; i++) {
        int fd = open(g->roots[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
            return gc_fail(g, "--state-root %s: %m", g->roots[i]);
        int r = walk(g, fd, g->roots[i], verify, 0);
        if (r < 0)
            return r;
    }
    return 0;
}

/* ---- the lock ---- */

static int lock_exclusive(Gc *g, int lock_fd) {
    int r = cli_flock_timeout(lock_fd, LOCK_EX, g->lock_timeout_s, &g->lock_wait_ms);
    if (r == -ETIMEDOUT)
        return gc_fail(g, "the pool stayed busy for %" PRIu64 " s (gc.lock held shared)", g->lock_timeout_s);
    if (r < 0)
        return gc_fail(g, "locking %s/gc.lock: %s", g->content[0], strerror(-r));
    return 0;
}

/* ---- steps 3 and 4 ---- */

static void test_hook(Gc *g) {
    if (g->stop_after >= 0 && (long) g->quarantined == g->stop_after) {
        /* For the kill -9 test: stop here, the lock held, and wait. */
        fprintf(stderr, "layoutd-wsfs gc: test hook: stopped after quarantining %ld objects\n", g->stop_after);
        for (;;)
            pause();
    }
}

typedef struct Victim {
    size_t shard;
    Digest d;
} Victim;

static int quarantine_and_sweep(Gc *g, int lock_fd) {
    _cleanup_free_ Victim *victims = NULL;
    size_t n_victims = 0, cap = 0;
    char hex[WSFS_HEX_LEN + 1], path[WSFS_HEX_LEN + 8];
    int r;

    qsort(g->dirs, g->n_dirs, sizeof(DirRec), dirrec_cmp);
    if ((r = lock_exclusive(g, lock_fd)) < 0)
        return r;
    int64_t held = now_ns(CLOCK_MONOTONIC);
    /* Nobody adds a reference now: complete the set. */
    r = walk_roots(g, true);
    for (size_t s = 0; r >= 0 && s < g->n_shards; s++) {
        /* What an earlier run left in the trash (it was killed). */
        _cleanup_close_ int dup1 = fcntl(g->trash_fds[s], F_DUPFD_CLOEXEC, 3);
        DIR *t = dup1 >= 0 ? fdopendir(dup1) : NULL;
        if (!t) {
            r = gc_fail(g, "%s/trash: %m", g->content[s]);
            break;
        }
        dup1 = -EBADF;
        for (struct dirent *e; (e = readdir(t));) {
            Digest dg;
            if (!digest_from_hex(e->d_name, &dg))
                continue;
            if (digest_set_has(&g->refs, &dg)) {
                snprintf(path, sizeof(path), "%.2s/%.64s", e->d_name, e->d_name);
                char sub[3] = { e->d_name[0], e->d_name[1], 0 };
                if (!g->dry_run) {
                    (void) mkdirat(g->objects_fds[s], sub, 0755);
                    if (renameat2(g->trash_fds[s], e->d_name, g->objects_fds[s], path, RENAME_NOREPLACE) < 0) {
                        if (errno != EEXIST) {
                            g->errors++;
                            continue;
                        }
                        /* A publisher stored the same content again
                         * meanwhile: the live copy is in objects/, this
                         * one is a duplicate and would stay in the trash
                         * for good. */
                        (void) unlinkat(g->trash_fds[s], e->d_name, 0);
                    }
                }
                g->restored++;
                continue;
            }
            if (!grow((void **) &victims, &cap, n_victims + 1, sizeof(Victim))) {
                r = gc_fail(g, "out of memory");
                break;
            }
            victims[n_victims++] = (Victim) { s, dg };
        }
        closedir(t);
    }
    for (size_t i = 0; r >= 0 && i < g->n_objects; i++) {
        Object *o = &g->objects[i];
        struct stat st;
        o->referenced = digest_set_has(&g->refs, &o->d);
        if (o->referenced)
            g->referenced++;
        if (o->young) {
            g->young++;
            continue;
        }
        if (o->referenced)
            continue;
        digest_to_hex(&o->d, hex);
        snprintf(path, sizeof(path), "%.2s/%s", hex, hex);
        /* Freshened since step 1 (a dedup hit about to reference it)? */
        if (fstatat(g->objects_fds[o->shard], path, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue; /* gone already */
        if (!older(st.st_mtim, g->cutoff)) {
            g->young++;
            continue;
        }
        if (!g->dry_run) {
            if (renameat(g->objects_fds[o->shard], path, g->trash_fds[o->shard], hex) < 0) {
                g->errors++;
                continue;
            }
            g->quarantined++;
            test_hook(g);
        }
        if (!grow((void **) &victims, &cap, n_victims + 1, sizeof(Victim))) {
            r = gc_fail(g, "out of memory");
            break;
        }
        victims[n_victims++] = (Victim) { o->shard, o->d };
        o->in_trash = true;
        g->bytes_freed += (uint64_t) st.st_blocks * 512; /* counted again below when it is unlinked */
    }
    (void) flock(lock_fd, LOCK_UN);
    g->lock_held_ms = (now_ns(CLOCK_MONOTONIC) - held) / 1000000;
    if (r < 0)
        return r; /* what is in the trash stays there for the next run */

    /* Step 4, unlocked: what is in the trash is nobody's. */
    g->bytes_freed = 0;
    for (size_t i = 0; i < n_victims; i++) {
        struct stat st;
        digest_to_hex(&victims[i].d, hex);
        if (g->dry_run) {
            snprintf(path, sizeof(path), "%.2s/%s", hex, hex);
            bool from_trash = fstatat(g->objects_fds[victims[i].shard], path, &st, AT_SYMLINK_NOFOLLOW) < 0;
            if (from_trash && fstatat(g->trash_fds[victims[i].shard], hex, &st, AT_SYMLINK_NOFOLLOW) < 0)
                continue;
            g->swept++;
            g->bytes_freed += (uint64_t) st.st_blocks * 512;
            continue;
        }
        if (fstatat(g->trash_fds[victims[i].shard], hex, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue; /* a daemon put it back (it should not have needed to) */
        if (unlinkat(g->trash_fds[victims[i].shard], hex, 0) < 0) {
            if (errno != ENOENT)
                g->errors++;
            continue;
        }
        g->swept++;
        g->bytes_freed += (uint64_t) st.st_blocks * 512;
    }
    return 0;
}

/* ---- command line ---- */

static void gc_usage(FILE *f) {
    fprintf(f,
            "usage: layoutd-wsfs gc --content DIR[,DIR...] --state-root DIR [--state-root DIR...] [options]\n"
            "  --content DIR[,DIR...]   the pool's dirs, in shard order (as the daemons take them)\n"
            "  --state-root DIR         a dir whose files may be stubs (the daemons' state dirs, kept\n"
            "                           data of removed workspaces); repeat for each; all must exist\n"
            "  --grace DURATION         never sweep objects younger than this (default 1h; s/m/h/d/w)\n"
            "  --lock-timeout DURATION  give up if the pool lock cannot be had (default 60s)\n"
            "  --dry-run                delete nothing; report what would be swept\n"
            "  --json                   one JSON line on stdout (see README)\n");
}

#define GC_BAD(...) ({ fprintf(stderr, "layoutd-wsfs gc: " __VA_ARGS__); fputc('\n', stderr); EXIT_USAGE; })

static void print_result(Gc *g, bool ok, int64_t duration_ms) {
    if (g->json) {
        char err[1100] = "null";
        if (!ok) {
            size_t o = 0;
            err[o++] = '"';
            for (const char *p = g->error; *p && o < sizeof(err) - 8; p++) {
                if (*p == '"' || *p == '\\')
                    err[o++] = '\\';
                err[o++] = (unsigned char) *p < 0x20 ? ' ' : *p;
            }
            err[o++] = '"';
            err[o] = 0;
        }
        printf("{\"ok\":%s,\"dry_run\":%s,\"grace_s\":%" PRIu64 ",\"objects_scanned\":%" PRIu64
               ",\"objects_referenced\":%" PRIu64 ",\"objects_young\":%" PRIu64 ",\"objects_swept\":%" PRIu64
               ",\"bytes_freed\":%" PRIu64 ",\"tmp_swept\":%" PRIu64 ",\"quarantined\":%" PRIu64
               ",\"restored\":%" PRIu64 ",\"stubs_scanned\":%" PRIu64 ",\"dirs_scanned\":%" PRIu64
               ",\"dirs_rescanned\":%" PRIu64 ",\"lock_wait_ms\":%" PRIu64 ",\"lock_held_ms\":%" PRIu64
               ",\"duration_ms\":%" PRId64 ",\"errors\":%" PRIu64 ",\"error\":%s}\n",
               ok ? "true" : "false", g->dry_run ? "true" : "false", g->grace_s, g->scanned, g->referenced,
               g->young, g->swept, g->bytes_freed, g->tmp_swept, g->quarantined, g->restored, g->stubs,
               g->dirs_scanned, g->dirs_rescanned, g->lock_wait_ms, g->lock_held_ms, duration_ms, g->errors, err);
    } else if (ok)
        printf("%s%" PRIu64 " objects, %" PRIu64 " referenced, %" PRIu64 " young; swept %" PRIu64 " (%" PRIu64
               " bytes), restored %" PRIu64 ", %" PRIu64 " errors, %" PRId64 " ms\n",
               g->dry_run ? "dry run: " : "", g->scanned, g->referenced, g->young, g->swept, g->bytes_freed,
               g->restored, g->errors, duration_ms);
    fflush(stdout);
}

static void gc_free(Gc *g) {
    for (size_t s = 0; s < g->n_shards; s++) {
        if (g->dir_fds)
            safe_close(g->dir_fds[s]);
        if (g->objects_fds)
            safe_close(g->objects_fds[s]);
        if (g->trash_fds)
            safe_close(g->trash_fds[s]);
    }
    free(g->dir_fds);
    free(g->objects_fds);
    free(g->trash_fds);
    free(g->objects);
    free(g->dirs);
    digest_set_done(&g->refs);
    cli_free_list(g->content, g->n_shards);
    cli_free_list(g->roots, g->n_roots);
}

/* A usage error: message, free, EXIT_USAGE. */
#define USAGE(...) ({ GC_BAD(__VA_ARGS__); gc_free(&g); EXIT_USAGE; })

int gc_main(int argc, char **argv) {
    enum { O_CONTENT = 256, O_ROOT, O_GRACE, O_LOCKTO, O_DRY, O_JSON, O_HELP };
    static const struct option opts[] = {
        { "content", required_argument, NULL, O_CONTENT },
        { "state-root", required_argument, NULL, O_ROOT },
        { "grace", required_argument, NULL, O_GRACE },
        { "lock-timeout", required_argument, NULL, O_LOCKTO },
        { "dry-run", no_argument, NULL, O_DRY },
        { "json", no_argument, NULL, O_JSON },
        { "help", no_argument, NULL, O_HELP },
        {},
    };
    Gc g = { .grace_s = 3600, .lock_timeout_s = 60, .stop_after = -1 };
    int c, ret = EXIT_FAILURE;
    int64_t t0 = now_ns(CLOCK_MONOTONIC);

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
        switch (c) {
        case O_CONTENT:
            if (cli_split_list(&g.content, &g.n_shards, optarg) < 0)
                return USAGE("out of memory");
            break;
        case O_ROOT:
            if (cli_split_list(&g.roots, &g.n_roots, optarg) < 0)
                return USAGE("out of memory");
            break;
        case O_GRACE:
            if (cli_parse_duration(optarg, &g.grace_s) < 0)
                return USAGE("--grace: '%s' is not a duration (e.g. 90s, 30m, 2h, 1d)", optarg);
            break;
        case O_LOCKTO:
            if (cli_parse_duration(optarg, &g.lock_timeout_s) < 0)
                return USAGE("--lock-timeout: '%s' is not a duration", optarg);
            break;
        case O_DRY:
            g.dry_run = true;
            break;
        case O_JSON:
            g.json = true;
            break;
        case 'h':
        case O_HELP:
            gc_usage(stdout);
            gc_free(&g);
            return EXIT_SUCCESS;
        default:
            gc_usage(stderr);
            gc_free(&g);
            return EXIT_USAGE;
        }
    }
    if (optind != argc)
        return USAGE("unexpected argument '%s'", argv[optind]);
    if (g.n_shards == 0)
        return USAGE("--content DIR[,DIR...] is required");
    if (g.n_roots == 0)
        return USAGE("--state-root DIR is required (at least one; every dir that may hold stubs)");
    const char *e = getenv("LAYOUTD_WSFS_GC_TEST_STOP_AFTER");
    if (!isempty(e))
        g.stop_after = strtol(e, NULL, 10);

    g.dir_fds = calloc(g.n_shards, sizeof(int));
    g.objects_fds = calloc(g.n_shards, sizeof(int));
    g.trash_fds = calloc(g.n_shards, sizeof(int));
    if (!g.dir_fds || !g.objects_fds || !g.trash_fds)
        return USAGE("out of memory");
    for (size_t s = 0; s < g.n_shards; s++)
        g.dir_fds[s] = g.objects_fds[s] = g.trash_fds[s] = -EBADF;
    _cleanup_close_ int lock_fd = -EBADF;
    for (size_t s = 0; s < g.n_shards; s++) {
        g.dir_fds[s] = open(g.content[s], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (g.dir_fds[s] < 0) {
            gc_fail(&g, "--content %s: %m", g.content[s]);
            goto done;
        }
        g.objects_fds[s] = openat(g.dir_fds[s], "objects", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (g.objects_fds[s] < 0) {
            gc_fail(&g, "--content %s: no objects/ (not a content pool?): %m", g.content[s]);
            goto done;
        }
        if ((mkdirat(g.dir_fds[s], "trash", 0700) < 0 && errno != EEXIST) ||
            (g.trash_fds[s] = openat(g.dir_fds[s], "trash", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
            gc_fail(&g, "%s/trash: %m", g.content[s]);
            goto done;
        }
    }
    lock_fd = openat(g.dir_fds[0], "gc.lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (lock_fd < 0) {
        gc_fail(&g, "%s/gc.lock: %m", g.content[0]);
        goto done;
    }

    clock_gettime(CLOCK_REALTIME, &g.cutoff);
    g.cutoff.tv_sec -= (time_t) MIN(g.grace_s, (uint64_t) g.cutoff.tv_sec);
    if (list_objects(&g) < 0 || walk_roots(&g, false) < 0 || quarantine_and_sweep(&g, lock_fd) < 0)
        goto done;
    ret = EXIT_SUCCESS;
done:
    print_result(&g, ret == EXIT_SUCCESS, (now_ns(CLOCK_MONOTONIC) - t0) / 1000000);
    if (ret != EXIT_SUCCESS)
        fprintf(stderr, "layoutd-wsfs gc: %s\n", g.error);
    gc_free(&g);
    return ret;
}
