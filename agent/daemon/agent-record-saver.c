/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The record's writer thread (agent-record-saver.h). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "agent-record-saver.h"
#include "log-messages.h"
#include "log.h"
#include "util.h"

/* A failed write is tried again after 1 s, doubling up to 30 s, until one
 * lands: an operator who frees the disk need not also change something. */
#define RETRY_FIRST_USEC (1 * USEC_PER_SEC)
#define RETRY_MAX_USEC (30 * USEC_PER_SEC)

struct RecordSaverWaiter {
    RecordSaver *saver;
    RecordSaverWaiter *next;
    uint64_t seq;                /* done once a write of seq or later ended */
    RecordSaverDone done;
    void *userdata;
};

struct RecordSaver {
    char *path;
    pthread_t thread;
    bool thread_started;
    int efd;                     /* the thread -> the loop: a write ended */
    sd_event *event;
    sd_event_source *source;
    sd_event_source *snap;       /* takes the snapshot of dirty, in the next iteration */
    sd_event_source *retry;      /* after a failed write: submit again */
    usec_t retry_usec;
    StateRecord *dirty;          /* submitted, not yet snapshotted (borrowed) */
    StateRecord *record;         /* the last one submitted (borrowed): retries */

    /* Shared with the thread, under lock. */
    pthread_mutex_t lock;
    pthread_cond_t wake;         /* the thread: something to write, or stop */
    char *pending;               /* the newest snapshot not yet taken */
    size_t pending_len;
    uint64_t pending_seq;
    uint64_t written_seq;        /* the newest snapshot whose write ended */
    int written_error;           /* its outcome */
    uint64_t ok_seq;             /* the newest snapshot that landed */
    uint64_t coalesced, writes, failures, max_write_usec, last_write_usec;
    bool stop;

    /* The loop's own. */
    uint64_t submitted_seq;
    uint64_t seen_seq;           /* written_seq as the loop last read it */
    uint64_t seen_ok_seq;        /* ok_seq as the loop last read it */
    int seen_error;
    RecordSaverWaiter *waiters, **waiters_tail; /* by seq */
};

static void kick(RecordSaver *s) {
    uint64_t one = 1;
    (void) !write(s->efd, &one, sizeof one);
}

static void *writer(void *userdata) {
    RecordSaver *s = userdata;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->pending && !s->stop)
            pthread_cond_wait(&s->wake, &s->lock);
        if (!s->pending)
            break; /* stop, and nothing left to write */
        char *text = s->pending;
        size_t len = s->pending_len;
        uint64_t seq = s->pending_seq;
        s->pending = NULL;
        pthread_mutex_unlock(&s->lock);

        usec_t t0 = now_usec(CLOCK_MONOTONIC);
        int r = write_file_atomic(s->path, text, len, 0600);
        usec_t took = now_usec(CLOCK_MONOTONIC) - t0;
        free(text);

        pthread_mutex_lock(&s->lock);
        if (seq > s->written_seq) { /* a failed snapshot may have told a newer one's fate */
            s->written_seq = seq;
            s->written_error = r < 0 ? r : 0;
        }
        if (r >= 0)
            s->ok_seq = MAX(s->ok_seq, seq);
        s->writes++;
        if (r < 0)
            s->failures++;
        s->last_write_usec = took;
        s->max_write_usec = MAX(s->max_write_usec, took);
        pthread_mutex_unlock(&s->lock);
        kick(s);
        pthread_mutex_lock(&s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static int on_retry(sd_event_source *source, usec_t usec, void *userdata) {
    RecordSaver *s = userdata;
    (void) source;
    (void) usec;
    if (s->seen_error < 0 && s->record && !s->dirty) {
        log_info("Saving the record %s again", s->path);
        (void) record_saver_submit(s, s->record);
    }
    return 0;
}

static void schedule_retry(RecordSaver *s) {
    s->retry_usec = s->retry_usec ? MIN(s->retry_usec * 2, RETRY_MAX_USEC) : RETRY_FIRST_USEC;
    int r = s->retry ? sd_event_source_set_time_relative(s->retry, s->retry_usec)
                     : sd_event_add_time_relative(s->event, &s->retry, CLOCK_MONOTONIC, s->retry_usec,
                                                  100 * USEC_PER_MSEC, on_retry, s);
    if (r >= 0)
        r = sd_event_source_set_enabled(s->retry, SD_EVENT_ONESHOT);
    if (r < 0)
        log_warning_errno(r, "Cannot schedule another save of the record %s (the next change saves it): %m",
                          s->path);
}

/* Learns what the thread wrote and delivers the waiters it covers: those
 * whose change landed (ok_seq) with 0, the rest of those it covers with
 * the error of the write that covered them. A callback may submit, wait
 * or cancel: the list is re-read after each. */
static void deliver(RecordSaver *s) {
    pthread_mutex_lock(&s->lock);
    uint64_t seq = s->written_seq, ok = s->ok_seq;
    int error = s->written_error;
    pthread_mutex_unlock(&s->lock);
    if (seq > s->seen_seq) {
        if (error < 0 && s->seen_error >= 0)
            log_context(LOG_ERR, -error, &(const LogContext) { .message_id = LAYOUTD_MESSAGE_RECORD_UNSAVED },
                        "Failed to save the record %s, the changes are kept in memory and saved again "
                        "shortly: %m",
                        s->path);
        else if (error >= 0 && s->seen_error < 0)
            log_notice("The record %s is saved again", s->path);
        s->seen_seq = seq;
        s->seen_error = error;
        if (error < 0)
            schedule_retry(s);
        else
            s->retry_usec = 0;
    }
    s->seen_ok_seq = MAX(s->seen_ok_seq, ok);
    while (s->waiters && s->waiters->seq <= s->seen_seq) {
        RecordSaverWaiter *w = s->waiters;
        s->waiters = w->next;
        if (!s->waiters)
            s->waiters_tail = &s->waiters;
        w->done(w->seq <= s->seen_ok_seq ? 0 : s->seen_error, w->userdata);
        free(w);
    }
}

static int on_written(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
    RecordSaver *s = userdata;
    uint64_t n;
    (void) source;
    (void) revents;
    (void) !read(fd, &n, sizeof n);
    deliver(s);
    return 0;
}

/* The snapshot of everything submitted so far, handed to the thread. */
static void take_snapshot(RecordSaver *s) {
    StateRecord *record = TAKE_PTR(s->dirty);
    if (!record)
        return;
    char *text;
    size_t len;
    int r = state_record_snapshot(record, &text, &len);
    pthread_mutex_lock(&s->lock);
    if (r < 0) {
        /* As a write that failed: the waiters learn it, and a retry
         * follows. An older snapshot still pending may land: ok_seq
         * keeps its waiters' success. */
        s->written_seq = s->submitted_seq;
        s->written_error = r;
        s->failures++;
    } else {
        if (s->pending) {
            free(s->pending); /* the newer snapshot holds its changes */
            s->coalesced++;
        }
        s->pending = text;
        s->pending_len = len;
        s->pending_seq = s->submitted_seq;
        pthread_cond_signal(&s->wake);
    }
    pthread_mutex_unlock(&s->lock);
    if (r < 0)
        kick(s);
}

static int on_snapshot(sd_event_source *source, void *userdata) {
    (void) source;
    take_snapshot(userdata);
    return 0;
}

int record_saver_new(sd_event *e, const char *path, RecordSaver **ret) {
    RecordSaver *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->efd = -EBADF;
    s->waiters_tail = &s->waiters;
    s->event = sd_event_ref(e);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->wake, NULL);
    int r = -ENOMEM;
    if (!(s->path = strdup(path)))
        goto fail;
    s->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (s->efd < 0) {
        r = negative_errno();
        goto fail;
    }
    r = sd_event_add_io(e, &s->source, s->efd, EPOLLIN, on_written, s);
    if (r < 0)
        goto fail;
    /* As urgent as the API's sources: a worker or a client waits on it. */
    (void) sd_event_source_set_priority(s->source, SD_EVENT_PRIORITY_NORMAL - 10);
    (void) sd_event_source_set_description(s->source, "record-saver");
    /* The snapshot is taken in a later dispatch than the submit's, so
     * that the saves of one callback (a placed workspace: its intent,
     * then active, then its daemon's pid) cost one serialisation of the
     * record, not three. As urgent as the API: a busy client does not
     * starve it. */
    r = sd_event_add_defer(e, &s->snap, on_snapshot, s);
    if (r < 0)
        goto fail;
    (void) sd_event_source_set_enabled(s->snap, SD_EVENT_OFF);
    (void) sd_event_source_set_priority(s->snap, SD_EVENT_PRIORITY_NORMAL - 10);
    (void) sd_event_source_set_description(s->snap, "record-snapshot");

    /* The thread takes no signal: the loop reads them from a signalfd,
     * which needs them blocked everywhere. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    r = -pthread_create(&s->thread, NULL, writer, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r < 0)
        goto fail;
    s->thread_started = true;
    *ret = s;
    return 0;
fail:
    record_saver_free(s);
    return r;
}

RecordSaver *record_saver_free(RecordSaver *s) {
    if (!s)
        return NULL;
    if (s->thread_started) {
        take_snapshot(s); /* submitted, not yet taken */
        pthread_mutex_lock(&s->lock);
        s->stop = true;
        pthread_cond_signal(&s->wake);
        pthread_mutex_unlock(&s->lock);
        /* The thread writes what is pending before it sees stop. */
        pthread_join(s->thread, NULL);
        /* The last word: a failed last write is tried once more, here,
         * and said either way; this process keeps the changes no longer. */
        if (s->written_error < 0 && s->record) {
            _cleanup_free_ char *text = NULL;
            size_t len;
            int r = state_record_snapshot(s->record, &text, &len);
            if (r >= 0)
                r = write_file_atomic(s->path, text, len, 0600);
            if (r < 0)
                log_error_errno(r, "Failed to save the record %s at exit: the latest changes are lost: %m",
                                s->path);
            else
                log_notice("The record %s is saved at exit, after an earlier failure", s->path);
        }
    }
    /* Waiters still queued learn that no answer is coming: their owners
     * free what they hold and do nothing else. */
    while (s->waiters) {
        RecordSaverWaiter *w = s->waiters;
        s->waiters = w->next;
        w->done(-ECANCELED, w->userdata);
        free(w);
    }
    sd_event_source_disable_unref(s->retry);
    sd_event_source_disable_unref(s->snap);
    sd_event_source_disable_unref(s->source);
    sd_event_unref(s->event);
    safe_close(s->efd);
    free(s->pending);
    free(s->path);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    free(s);
    return NULL;
}

int record_saver_submit(RecordSaver *s, StateRecord *record) {
    if (!s || !record)
        return -EINVAL;
    s->dirty = s->record = record;
    s->submitted_seq++;
    if (sd_event_source_set_enabled(s->snap, SD_EVENT_ONESHOT) < 0)
        take_snapshot(s); /* cannot defer it: take it now */
    return 0;
}

int record_saver_wait(RecordSaver *s, RecordSaverDone done, void *userdata, RecordSaverWaiter **ret) {
    RecordSaverWaiter *w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    *w = (RecordSaverWaiter) { .saver = s, .seq = s->submitted_seq, .done = done, .userdata = userdata };
    *s->waiters_tail = w;
    s->waiters_tail = &w->next;
    if (w->seq <= s->seen_seq)
        kick(s); /* durable already: deliver from the loop, as any other */
    if (ret)
        *ret = w;
    return 0;
}

void record_saver_waiter_cancel(RecordSaverWaiter *w) {
    if (!w)
        return;
    RecordSaver *s = w->saver;
    for (RecordSaverWaiter **p = &s->waiters; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            if (!*p)
                s->waiters_tail = p;
            free(w);
            return;
        }
}

bool record_saver_idle(const RecordSaver *s) {
    return s->seen_seq >= s->submitted_seq && !s->waiters;
}

int record_saver_last_error(const RecordSaver *s) {
    return s->seen_error;
}

void record_saver_stats(const RecordSaver *s, RecordSaverStats *ret) {
    RecordSaver *m = (RecordSaver *) s; /* the lock only */
    pthread_mutex_lock(&m->lock);
    *ret = (RecordSaverStats) {
        .writes = s->writes,
        .failures = s->failures,
        .coalesced = s->coalesced,
        .max_write_usec = s->max_write_usec,
        .last_write_usec = s->last_write_usec,
    };
    pthread_mutex_unlock(&m->lock);
}
