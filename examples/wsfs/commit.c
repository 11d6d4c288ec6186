/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Group commit. FUSE threads add records (one file written, created,
 * renamed, unlinked, ...) to the open batch; the committer thread closes
 * the batch when it holds batch_records records or batch_usec after its
 * first record, whichever comes first, and makes it durable:
 *   syncfs     syncfs(2) on the state filesystem and on each content
 *              shard that got an object: the published engine's way. It
 *              flushes every dirty page of those filesystems, everyone's.
 *   fdatasync  fdatasync(2) of each file of the batch, fsync(2) of each
 *              directory (and CAS stub) it touched: the narrow fix.
 *   none       nothing (records still count, for comparison runs).
 * Records arriving while a batch flushes join the next one; when that one
 * is full too, writers wait (back-pressure) instead of growing it.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "wsfs.h"

#define STATS_MIN_INTERVAL (100 * USEC_PER_MSEC) /* at most ~10 writes/s */

typedef struct Batch {
    uint64_t id;
    size_t n_records;
    usec_t opened;           /* CLOCK_MONOTONIC of the first record */
    CommitItem *items;       /* fdatasync mode: by handle, no fds held */
    size_t n_items, cap_items;
    CasPunch *punches;
    size_t n_punches, cap_punches;
    bool *shards;            /* content shards that got objects */
    bool overflow;           /* could not track an item: sync whole fs */
} Batch;

struct Committer {
    CommitterConfig cfg;
    pthread_mutex_t lock;
    pthread_cond_t wake;     /* to the committer: records, stats, stop */
    pthread_cond_t taken;    /* to writers: the open batch was taken */
    Batch open;
    atomic_uint_fast64_t open_id;
    bool stop, stats_wanted;
    usec_t stats_written;
    pthread_t thread;
};

static const char *const commit_mode_table[_COMMIT_MODE_MAX] = {
    [COMMIT_SYNCFS] = "syncfs",
    [COMMIT_FDATASYNC] = "fdatasync",
    [COMMIT_NONE] = "none",
};

const char *commit_mode_to_string(CommitMode m) {
    return m >= 0 && m < _COMMIT_MODE_MAX ? commit_mode_table[m] : NULL;
}

CommitMode commit_mode_from_string(const char *s) {
    for (int i = 0; s && i < _COMMIT_MODE_MAX; i++)
        if (streq(s, commit_mode_table[i]))
            return i;
    return _COMMIT_MODE_INVALID;
}

static usec_t now_mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (usec_t) ts.tv_sec * USEC_PER_SEC + ts.tv_nsec / NSEC_PER_USEC;
}

static void timed_wait(pthread_cond_t *cond, pthread_mutex_t *lock, usec_t until) {
    struct timespec ts = { .tv_sec = until / USEC_PER_SEC, .tv_nsec = (until % USEC_PER_SEC) * NSEC_PER_USEC };
    pthread_cond_timedwait(cond, lock, &ts);
}

static void batch_release(Batch *b) {
    free(b->items);
    free(b->punches);
    free(b->shards);
    *b = (Batch) {};
}

static bool grow(void **p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap)
        return true;
    size_t n = MAX(need, *cap * 2 + 16);
    void *q = reallocarray(*p, n, size);
    if (!q)
        return false;
    *p = q;
    *cap = n;
    return true;
}

uint64_t committer_add(Committer *c, const CommitItem *items, size_t n_items,
                       ssize_t shard, const CasPunch *punch) {
    pthread_mutex_lock(&c->lock);
    /* A full batch is the committer's to take; wait for that (it may
     * still be flushing the previous one). Batches never exceed the size. */
    while (c->open.n_records >= c->cfg.batch_records && !c->stop)
        pthread_cond_wait(&c->taken, &c->lock);

    Batch *b = &c->open;
    if (b->n_records++ == 0) {
        b->opened = now_mono();
        pthread_cond_signal(&c->wake);
    } else if (b->n_records == c->cfg.batch_records)
        pthread_cond_signal(&c->wake);
    atomic_fetch_add(&c->cfg.stats->records, 1);

    /* Only fdatasync mode needs to know the inodes. They are kept by
     * handle: a batch of 512 records holds no fds (it used to hold a dup
     * per item, up to three per record). */
    for (size_t i = 0; c->cfg.mode == COMMIT_FDATASYNC && i < n_items && !b->overflow; i++) {
        bool dup_found = false;
        for (size_t j = 0; j < b->n_items && !dup_found; j++)
            dup_found = file_handle_equal(&b->items[j].fh, &items[i].fh) && b->items[j].full >= items[i].full;
        if (dup_found)
            continue;
        if (items[i].fh.len == 0 || !grow((void **) &b->items, &b->cap_items, b->n_items + 1, sizeof(CommitItem))) {
            /* No handle, or out of memory: this batch falls back to
             * syncfs rather than lose durability. */
            b->overflow = true;
            break;
        }
        b->items[b->n_items++] = items[i];
    }
    if (shard >= 0 && c->cfg.pool->n_shards > 0) {
        if (!b->shards)
            b->shards = calloc(c->cfg.pool->n_shards, sizeof(bool));
        if (b->shards)
            b->shards[shard] = true;
        else
            b->overflow = true;
    }
    /* A punch we cannot queue is just a missed saving: the stub keeps
     * its data, which is always safe. */
    if (punch && grow((void **) &b->punches, &b->cap_punches, b->n_punches + 1, sizeof(CasPunch)))
        b->punches[b->n_punches++] = *punch;
    uint64_t id = b->id;
    pthread_mutex_unlock(&c->lock);
    return id;
}

uint64_t committer_current(Committer *c) {
    return atomic_load(&c->open_id);
}

void committer_write_stats(Committer *c) {
    pthread_mutex_lock(&c->lock);
    c->stats_wanted = true;
    c->stats_written = 0; /* an explicit request is not throttled */
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->lock);
}

void committer_stats_changed(Committer *c) {
    pthread_mutex_lock(&c->lock);
    c->stats_wanted = true; /* throttled: the loop writes it when the interval is over */
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->lock);
}

static int sync_one(Committer *c, int fd, bool full, bool is_syncfs) {
    usec_t t0 = now_mono();
    int r = is_syncfs ? syncfs(fd) : full ? fsync(fd) : fdatasync(fd);
    if (r < 0) {
        r = negative_errno();
        atomic_fetch_add(&c->cfg.stats->flush_errors, 1);
        fprintf(stderr, "layoutd-wsfs: %s failed: %s\n", is_syncfs ? "syncfs" : "fsync", strerror(-r));
    }
    atomic_fetch_add(&c->cfg.stats->flushes, 1);
    atomic_fetch_add(&c->cfg.stats->flush_us, now_mono() - t0);
    return r;
}

/* Returns: <0 if some part of the batch may not be durable. */
static int batch_flush(Committer *c, Batch *b) {
    size_t n_shards = c->cfg.pool->n_shards;
    int r = 0;

    if (c->cfg.mode == COMMIT_NONE)
        return 0;
    if (c->cfg.mode == COMMIT_SYNCFS || b->overflow) {
        /* Content first: a stub may only lose its data once the object it
         * points to is durable (and the punch comes after this anyway). */
        for (size_t i = 0; b->shards && i < n_shards; i++)
            if (b->shards[i] && sync_one(c, c->cfg.pool->objects_fds[i], false, true) < 0)
                r = -EIO;
        if (sync_one(c, c->cfg.state_fd, false, true) < 0)
            r = -EIO;
        return r;
    }
    for (size_t i = 0; i < b->n_items; i++) {
        _cleanup_close_ int fd = -EBADF;
        while ((fd = file_handle_open(c->cfg.mounts, &b->items[i].fh, O_RDONLY | O_NOCTTY | O_NONBLOCK)) < 0 &&
               fdcache_shed(c->cfg.fdc, -fd))
            ;
        if (fd == -ESTALE)
            continue; /* deleted since: nothing left to make durable */
        if (fd < 0) {
            fprintf(stderr, "layoutd-wsfs: reopen for fsync failed: %s\n", strerror(-fd));
            atomic_fetch_add(&c->cfg.stats->flush_errors, 1);
            r = -EIO;
            continue;
        }
        if (sync_one(c, fd, b->items[i].full, false) < 0)
            r = -EIO;
    }
    return r;
}

static void maybe_write_stats(Committer *c, bool force) {
    usec_t now = now_mono();
    if (!c->cfg.stats_path) {
        c->stats_wanted = false;
        return;
    }
    if (!force && now < c->stats_written + STATS_MIN_INTERVAL) {
        c->stats_wanted = true; /* the loop writes it when the interval is over */
        return;
    }
    c->stats_wanted = false;
    c->stats_written = now;
    pthread_mutex_unlock(&c->lock);
    int r = stats_write(c->cfg.stats, commit_mode_to_string(c->cfg.mode), c->cfg.stats_path);
    if (r < 0)
        fprintf(stderr, "layoutd-wsfs: writing %s failed: %s, ignoring\n", c->cfg.stats_path, strerror(-r));
    pthread_mutex_lock(&c->lock);
}

static void *committer_thread(void *arg) {
    Committer *c = arg;

    pthread_mutex_lock(&c->lock);
    for (;;) {
        if (c->open.n_records == 0) {
            if (c->stop)
                break;
            if (c->stats_wanted) {
                usec_t due = c->stats_written + STATS_MIN_INTERVAL;
                if (now_mono() >= due)
                    maybe_write_stats(c, true);
                else
                    timed_wait(&c->wake, &c->lock, due);
            } else
                pthread_cond_wait(&c->wake, &c->lock);
            continue;
        }
        /* A batch is open: wait until it is full or old enough. */
        usec_t deadline = c->open.opened + c->cfg.batch_usec;
        while (!c->stop && c->open.n_records < c->cfg.batch_records && now_mono() < deadline)
            timed_wait(&c->wake, &c->lock, deadline);

        Batch b = c->open;
        c->open = (Batch) { .id = b.id + 1 };
        atomic_store(&c->open_id, b.id + 1);
        pthread_cond_broadcast(&c->taken);
        pthread_mutex_unlock(&c->lock);

        int r = batch_flush(c, &b);
        /* Only once the objects are durable may the stubs drop their data;
         * after a failed batch the punches are kept, to be made durable
         * and done later, not forgotten (issue 35.3). */
        for (size_t i = 0; i < b.n_punches; i++)
            c->cfg.punch(c->cfg.userdata, &b.punches[i], r >= 0);
        if (c->cfg.batch_done)
            c->cfg.batch_done(c->cfg.userdata);

        pthread_mutex_lock(&c->lock);
        atomic_fetch_add(&c->cfg.stats->records_committed, b.n_records);
        atomic_fetch_add(&c->cfg.stats->batches, 1);
        pthread_cond_broadcast(&c->taken);
        batch_release(&b);
        maybe_write_stats(c, false);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

int committer_start(const CommitterConfig *cfg, Committer **ret) {
    _cleanup_free_ Committer *c = calloc(1, sizeof(Committer));
    pthread_condattr_t attr;

    if (!c)
        return -ENOMEM;
    c->cfg = *cfg;
    c->cfg.batch_records = MAX(cfg->batch_records, (size_t) 1);
    pthread_mutex_init(&c->lock, NULL);
    /* Deadlines are monotonic: a clock step must not stretch a batch. */
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&c->wake, &attr);
    pthread_cond_init(&c->taken, &attr);
    pthread_condattr_destroy(&attr);
    c->open.id = 1;
    atomic_store(&c->open_id, 1);
    c->stats_wanted = cfg->stats_path != NULL; /* a first stats file at start */

    int r = pthread_create(&c->thread, NULL, committer_thread, c);
    if (r != 0)
        return -r;
    *ret = TAKE_PTR(c);
    return 0;
}

void committer_stop(Committer *c) {
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    c->stop = true;
    pthread_cond_broadcast(&c->wake);
    pthread_cond_broadcast(&c->taken);
    pthread_mutex_unlock(&c->lock);
    pthread_join(c->thread, NULL);
    /* The thread committed everything; one last, unthrottled stats write. */
    if (c->cfg.stats_path)
        (void) stats_write(c->cfg.stats, commit_mode_to_string(c->cfg.mode), c->cfg.stats_path);
    batch_release(&c->open);
    pthread_cond_destroy(&c->wake);
    pthread_cond_destroy(&c->taken);
    pthread_mutex_destroy(&c->lock);
    free(c);
}
