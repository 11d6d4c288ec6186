/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * This workspace's use of the shared content pool, and the walk of the
 * state dir that counts it.
 *
 * What is counted: the bytes of the distinct objects this workspace's
 * stubs reference (an object's size is its stub's apparent size). Two
 * stubs of one workspace with the same content count once; an object that
 * several workspaces reference counts once for each of them (each could
 * keep it alive alone). The bound (--pool-share) applies to what this
 * daemon adds: a file whose size would take the count over it stays whole
 * in the state dir (share_kept).
 *
 * How it is known: a walk of the state dir (lstat + the xattr of each
 * regular file) in a thread of its own, at start while the mount already
 * serves, at a low priority; until it has counted, a bounded workspace
 * publishes nothing. Then every object this daemon references is added.
 * What stops referencing one (unlink, a rename over a stub, a copy-up) is
 * not looked at on the hot path: it only sets a flag, and when a store
 * would go over the bound and that flag is set (and the last walk is at
 * least SHARE_RECOUNT_USEC old), the walk counts again. So the count is
 * never below the truth for long enough to matter: it only errs high
 * (deletions not yet seen), which keeps files out of the pool, never lets
 * too many in. Why not the sweeper's figures: gc runs every few minutes
 * or hours, and a count that lags by that much would let a workspace fill
 * the pool between two runs; a restarted daemon would also have to trust
 * a file somebody else wrote.
 *
 * The same walk finds stubs whose object is neither in the pool nor in
 * the sweeper's trash and that do not carry the whole-data marker: each
 * such object is counted as missing (stats) and logged once, so that a
 * lost pool is reported at start, before anything is read.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/xattr.h>
#include <time.h>

#include "wsfs.h"

#define SHARE_RECOUNT_USEC (5 * USEC_PER_SEC)

static usec_t now_mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (usec_t) ts.tv_sec * USEC_PER_SEC + ts.tv_nsec / NSEC_PER_USEC;
}

typedef struct Walk {
    Walker walker;
    PoolShare *s;
    DigestSet refs, present; /* referenced; of those, known to be in the pool */
    uint64_t used;
    bool failed; /* out of memory: the count is not complete */
} Walk;

static int walk_file(Walker *walker, int dir_fd, const char *rel, const char *name, const struct stat *st) {
    Walk *w = (Walk *) walker;
    char val[WSFS_HEX_LEN + 1], path[PATH_MAX];
    Digest d;

    if (st->st_size == 0)
        return 0;
    /* getxattr by path, through the open directory: no open of the file
     * (it may be a FIFO's name by now; lgetxattr does not care). */
    if (snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", dir_fd, name) >= (int) sizeof(path))
        return 0;
    ssize_t n = lgetxattr(path, WSFS_XATTR_CAS, val, WSFS_HEX_LEN);
    if (n < 0) {
        if (errno != ENODATA && errno != ENOTSUP && errno != ENOENT)
            w->walker.errors++;
        return 0;
    }
    if (n != WSFS_HEX_LEN)
        return 0;
    val[n] = 0;
    if (!digest_from_hex(val, &d))
        return 0;
    int r = digest_set_add(&w->refs, &d);
    if (r < 0) {
        w->failed = true;
        return r;
    }
    if (r > 0)
        w->used += st->st_size;
    /* Whole on the state volume and a reference to the pool: its data is
     * held twice until it is punched (the callback checks the object). */
    if (w->s->whole && (uint64_t) st->st_blocks * 512 >= (uint64_t) st->st_size &&
        lgetxattr(path, WSFS_XATTR_WHOLE, NULL, 0) >= 0)
        w->s->whole(w->s->whole_ctx, dir_fd, name, val);
    if (digest_set_has(&w->present, &d))
        return 0;
    /* Neither in the pool nor in the trash, and not known to hold its
     * whole data: reads of it will be EIO. A stub with the marker is
     * checked when it is opened (its data is hashed then); another stub
     * of the same digest may have none, so each is looked at. */
    int state = cas_object_state(w->s->pool, val);
    if (state > 0 && digest_set_add(&w->present, &d) < 0) {
        w->failed = true;
        return -ENOMEM;
    }
    if (state != 0)
        return 0; /* there (or an error looking: not called missing) */
    if (lgetxattr(path, WSFS_XATTR_WHOLE, NULL, 0) < 0 && errno == ENODATA && stats_note_missing(w->s->stats, val) == 1)
        fprintf(stderr, "layoutd-wsfs: object %s of %s/%s%s%s is missing from the content pool "
                "(found by the walk of the state dir): reads of it give EIO\n",
                val, w->s->root_path, rel, rel[0] ? "/" : "", name);
    return 0;
}

static void *walker(void *arg) {
    PoolShare *s = arg;

    /* Background work: the workload's requests come first. */
    (void) setpriority(PRIO_PROCESS, (id_t) gettid(), 10);
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while ((!s->want_walk || !s->go) && !atomic_load(&s->stop))
            pthread_cond_wait(&s->wake, &s->lock);
        if (atomic_load(&s->stop))
            break;
        s->want_walk = false;
        s->walking = true;
        s->n_since = 0;
        s->since_lost = false;
        s->last_walk = now_mono();
        /* Removals from now on may not be seen by this walk. */
        atomic_store(&s->removed, false);
        pthread_mutex_unlock(&s->lock);

        Walk w = { .walker = { .file = walk_file, .stop = &s->stop }, .s = s };
        usec_t t0 = now_mono();
        int r = walk_files(&w.walker, s->root_fd);
        if (r < 0) {
            fprintf(stderr, "layoutd-wsfs: walking %s to count its use of the pool failed: %s\n", s->root_path,
                    strerror(-r));
            w.failed = true;
        }

        stats_log_missing(s->stats, true);
        pthread_mutex_lock(&s->lock);
        s->walking = false;
        /* What was stored while it walked is referenced too (the walk
         * may have passed its directory before). */
        for (size_t i = 0; !w.failed && i < s->n_since; i++) {
            int k = digest_set_add(&w.refs, &s->since[i].d);
            if (k < 0)
                w.failed = true;
            else if (k > 0)
                w.used += s->since[i].size;
        }
        s->n_since = 0;
        digest_set_done(&w.present);
        if (s->since_lost)
            w.failed = true;
        atomic_fetch_add(&s->stats->scan_errors, w.walker.errors);
        if (w.failed || atomic_load(&s->stop)) {
            digest_set_done(&w.refs);
            continue;
        }
        digest_set_done(&s->refs);
        s->refs = w.refs;
        s->used = w.used;
        s->counted = true;
        atomic_store(&s->stats->pool_bytes, s->used);
        atomic_store(&s->stats->pool_objects, s->refs.n);
        atomic_store(&s->stats->pool_counted, true);
        atomic_store(&s->stats->scan_ms, (now_mono() - t0) / USEC_PER_MSEC);
        atomic_fetch_add(&s->stats->scans, 1);
        if (s->notify) {
            pthread_mutex_unlock(&s->lock);
            s->notify(s->userdata);
            pthread_mutex_lock(&s->lock);
        }
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

int share_init(PoolShare *s, const CasPool *pool, int state_fd, uint64_t limit, Stats *stats) {
    char proc[32], path[PATH_MAX];

    *s = (PoolShare) { .limit = limit, .pool = pool, .stats = stats, .root_fd = -EBADF };
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->wake, NULL);
    atomic_store(&stats->pool_share, limit);
    if (pool->n_shards == 0)
        return 0; /* no pool: nothing to count, nothing goes there */

    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", state_fd);
    s->root_fd = open(proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s->root_fd < 0)
        return negative_errno();
    ssize_t n = readlink(proc, path, sizeof(path) - 1);
    path[n > 0 ? n : 0] = 0;
    if (!(s->root_path = strdup(path)))
        return -ENOMEM;
    s->want_walk = true;
    int r = pthread_create(&s->thread, NULL, walker, s);
    if (r != 0)
        return -r;
    s->started = true;
    return 0;
}

void share_on_whole(PoolShare *s, void (*whole)(void *ctx, int dir_fd, const char *name, const char *hex), void *ctx) {
    pthread_mutex_lock(&s->lock);
    s->whole = whole;
    s->whole_ctx = ctx;
    pthread_mutex_unlock(&s->lock);
}

void share_start(PoolShare *s, void (*notify)(void *userdata), void *userdata) {
    pthread_mutex_lock(&s->lock);
    s->notify = notify;
    s->userdata = userdata;
    s->go = true;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
}

bool share_reserve(PoolShare *s, uint64_t size) {
    bool ok;
    if (!s->started)
        return false;
    pthread_mutex_lock(&s->lock);
    if (s->limit == UINT64_MAX)
        ok = true;
    else if (!s->counted) {
        ok = false; /* the first walk has not counted yet (or failed: try again) */
        if (!s->walking && !s->want_walk && now_mono() >= s->last_walk + SHARE_RECOUNT_USEC) {
            s->want_walk = true;
            pthread_cond_signal(&s->wake);
        }
    }
    else if (size <= s->limit && s->used + s->reserved <= s->limit - size)
        ok = true;
    else {
        ok = false;
        if (atomic_load_explicit(&s->removed, memory_order_relaxed) && !s->walking && !s->want_walk &&
            now_mono() >= s->last_walk + SHARE_RECOUNT_USEC) {
            s->want_walk = true;
            pthread_cond_signal(&s->wake);
        }
    }
    if (ok)
        s->reserved += size;
    pthread_mutex_unlock(&s->lock);
    return ok;
}

void share_commit(PoolShare *s, uint64_t size, const char *hex) {
    Digest d;
    if (!s->started)
        return;
    pthread_mutex_lock(&s->lock);
    s->reserved -= MIN(size, s->reserved);
    if (hex && digest_from_hex(hex, &d)) {
        /* Out of memory: not counted; the next walk will. */
        if (digest_set_add(&s->refs, &d) > 0)
            s->used += size;
        if (s->walking) {
            if (s->n_since == s->cap_since) {
                size_t cap = s->cap_since * 2 + 16;
                ShareStored *n = reallocarray(s->since, cap, sizeof(ShareStored));
                if (n) {
                    s->since = n;
                    s->cap_since = cap;
                }
            }
            if (s->n_since < s->cap_since)
                s->since[s->n_since++] = (ShareStored) { d, size };
            else
                s->since_lost = true; /* that walk's count would miss it: it is not taken */
        }
        atomic_store(&s->stats->pool_bytes, s->used);
        atomic_store(&s->stats->pool_objects, s->refs.n);
    }
    pthread_mutex_unlock(&s->lock);
}

void share_stop(PoolShare *s) {
    if (s->started) {
        pthread_mutex_lock(&s->lock);
        atomic_store(&s->stop, true);
        pthread_cond_signal(&s->wake);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->thread, NULL);
        s->started = false;
    }
}

void share_done(PoolShare *s) {
    share_stop(s);
    digest_set_done(&s->refs);
    free(s->since);
    free(s->root_path);
    s->root_fd = safe_close(s->root_fd);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
}
