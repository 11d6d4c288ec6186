/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The group commit of the reference daemon, without the daemon.
 *
 * Copied from examples/wsfs/commit.c (Committer, committer_add,
 * committer_thread) in --commit=syncfs mode, with its defaults
 * (--batch-records=512, --batch-ms=50, examples/wsfs/main.c):
 *   - a record joins the open batch; the first record of a batch starts
 *     its clock;
 *   - the committer closes the batch when it holds batch_records records
 *     or batch_usec after its first record, whichever comes first, and
 *     makes it durable with syncfs(2) (here: of the workload's own
 *     directory's filesystem; the daemon also syncfs'es each content
 *     shard that got an object, and there is no content pool here);
 *   - records arriving while a batch flushes join the next one; when that
 *     one is full too, writers wait for the committer to take it
 *     (back-pressure), a batch never exceeds batch_records;
 *   - deadlines are CLOCK_MONOTONIC.
 * What counts as a record is the caller's (workload.c follows the
 * daemon's ops.c: one per create / O_TRUNC open, one per file and batch
 * however many writes, one per mkdir, rename, unlink).
 *
 * Where it differs, and why: waiting for durability (group_commit_wait)
 * replaces polling the daemon's stats file, and does not hurry the open
 * batch, so the last batch waits out its deadline as the daemon's does.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "groupcommit.h"

struct GroupCommit {
    int fd;
    uint64_t batch_records, batch_ns;
    pthread_mutex_t lock;
    pthread_cond_t wake;  /* to the committer: a first record, a full batch, stop */
    pthread_cond_t taken; /* to writers: the open batch was taken (or committed) */
    uint64_t open_id, open_records, open_since;
    bool stop;
    GroupCommitStats stats;
    pthread_t thread;
};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static void timed_wait(pthread_cond_t *cond, pthread_mutex_t *lock, uint64_t until_ns) {
    struct timespec ts = { .tv_sec = (time_t) (until_ns / 1000000000ULL), .tv_nsec = (long) (until_ns % 1000000000ULL) };
    pthread_cond_timedwait(cond, lock, &ts);
}

uint64_t group_commit_add(GroupCommit *g) {
    pthread_mutex_lock(&g->lock);
    while (g->open_records >= g->batch_records && !g->stop)
        pthread_cond_wait(&g->taken, &g->lock);
    if (g->open_records++ == 0) {
        g->open_since = now_ns();
        pthread_cond_signal(&g->wake);
    } else if (g->open_records == g->batch_records)
        pthread_cond_signal(&g->wake);
    g->stats.records++;
    uint64_t id = g->open_id;
    pthread_mutex_unlock(&g->lock);
    return id;
}

uint64_t group_commit_current(GroupCommit *g) {
    pthread_mutex_lock(&g->lock);
    uint64_t id = g->open_id;
    pthread_mutex_unlock(&g->lock);
    return id;
}

static void *committer_thread(void *arg) {
    GroupCommit *g = arg;

    pthread_mutex_lock(&g->lock);
    for (;;) {
        if (g->open_records == 0) {
            if (g->stop)
                break;
            pthread_cond_wait(&g->wake, &g->lock);
            continue;
        }
        /* A batch is open: wait until it is full or old enough. */
        uint64_t deadline = g->open_since + g->batch_ns;
        while (!g->stop && g->open_records < g->batch_records && now_ns() < deadline)
            timed_wait(&g->wake, &g->lock, deadline);

        uint64_t n = g->open_records;
        g->open_records = 0;
        g->open_id++;
        pthread_cond_broadcast(&g->taken);
        pthread_mutex_unlock(&g->lock);

        uint64_t t0 = now_ns();
        int r = syncfs(g->fd);
        uint64_t t1 = now_ns();
        if (r < 0)
            fprintf(stderr, "flushscope-workload: syncfs failed: %m\n");

        pthread_mutex_lock(&g->lock);
        g->stats.flushes++;
        g->stats.flush_ns += t1 - t0;
        g->stats.flush_errors += r < 0;
        g->stats.records_committed += n;
        g->stats.batches++;
        g->stats.last_commit_ns = t1;
        pthread_cond_broadcast(&g->taken);
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

int group_commit_start(int fd, uint64_t batch_records, uint64_t batch_usec, GroupCommit **ret) {
    GroupCommit *g = calloc(1, sizeof(GroupCommit));
    pthread_condattr_t attr;

    if (!g)
        return -ENOMEM;
    g->fd = fd;
    g->batch_records = batch_records > 0 ? batch_records : 1;
    g->batch_ns = batch_usec * 1000ULL;
    g->open_id = 1;
    pthread_mutex_init(&g->lock, NULL);
    /* Deadlines are monotonic: a clock step must not stretch a batch. */
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&g->wake, &attr);
    pthread_cond_init(&g->taken, &attr);
    pthread_condattr_destroy(&attr);
    int r = pthread_create(&g->thread, NULL, committer_thread, g);
    if (r != 0) {
        pthread_cond_destroy(&g->wake);
        pthread_cond_destroy(&g->taken);
        pthread_mutex_destroy(&g->lock);
        free(g);
        return -r;
    }
    *ret = g;
    return 0;
}

int group_commit_wait(GroupCommit *g, uint64_t timeout_ns, uint64_t *ret_durable_ns) {
    uint64_t limit = now_ns() + timeout_ns;
    int r = 0;

    pthread_mutex_lock(&g->lock);
    /* The committer broadcasts `taken` after every commit. */
    while (g->stats.records_committed < g->stats.records) {
        if (now_ns() >= limit) {
            r = -ETIMEDOUT;
            break;
        }
        timed_wait(&g->taken, &g->lock, limit);
    }
    if (r == 0 && g->stats.flush_errors > 0)
        r = -EIO;
    if (r == 0 && ret_durable_ns)
        *ret_durable_ns = g->stats.last_commit_ns;
    pthread_mutex_unlock(&g->lock);
    return r;
}

void group_commit_get_stats(GroupCommit *g, GroupCommitStats *ret) {
    pthread_mutex_lock(&g->lock);
    *ret = g->stats;
    pthread_mutex_unlock(&g->lock);
}

GroupCommit *group_commit_stop(GroupCommit *g) {
    if (!g)
        return NULL;
    pthread_mutex_lock(&g->lock);
    g->stop = true;
    pthread_cond_broadcast(&g->wake);
    pthread_cond_broadcast(&g->taken);
    pthread_mutex_unlock(&g->lock);
    pthread_join(g->thread, NULL);
    pthread_cond_destroy(&g->wake);
    pthread_cond_destroy(&g->taken);
    pthread_mutex_destroy(&g->lock);
    free(g);
    return NULL;
}
