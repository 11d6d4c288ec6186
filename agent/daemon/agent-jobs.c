/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Volume jobs: every engine verb that touches a device runs in a worker
 * (src/engine/worker.h). Jobs on the same volume, or with a job on all
 * volumes, run one after the other, in the order they came; the rest at
 * once (eight creates that each carve a volume carve in parallel).
 *
 * A worker's record changes arrive one volume entry at a time, while it
 * waits: they are merged into the agent's record and saved (by the saver
 * thread, agent-record-saver.h) before it is answered, so the agent stays
 * the only writer of the record file. When
 * the worker ends, its per-volume results and its observation of the
 * job's volumes are merged into what the API serves.
 */
#include <errno.h>
#include <stdio.h>

#include "agent.h"
#include "log.h"
#include "util.h"

struct VolumeJob {
    Agent *agent;
    VolumeJob *next;
    char *op;
    json_object *args;
    char *volume;                /* NULL: every volume */
    ApiOperation *operation;
    int step;                    /* the operation's current step, or -1 */
    VolumeJobDone done;
    void *userdata;
    Worker *worker;              /* NULL: queued (or failed to start) */
    RecordSaverWaiter *save_wait; /* the worker waits for its change to be durable */
    sd_event_source *failed;     /* set: the worker could not start; delivered from the loop */
    int start_error;
    char *start_message;
    usec_t started;
    unsigned flags;              /* AgentJobFlags */
};

bool agent_jobs_busy(Agent *a, const char *volume) {
    for (VolumeJob *j = a->jobs; j; j = j->next)
        if (j->worker && (!j->volume || streq(j->volume, volume)))
            return true;
    return false;
}

/* When a job last ended on a volume (Agent.job_seq then). */
struct JobEnded {
    char *volume;
    uint64_t seq;
};

static void job_ended_on(Agent *a, const char *volume) {
    for (size_t i = 0; i < a->n_jobs_ended; i++)
        if (streq(a->jobs_ended[i].volume, volume)) {
            a->jobs_ended[i].seq = a->job_seq;
            return;
        }
    JobEnded *t = realloc(a->jobs_ended, sizeof(*t) * (a->n_jobs_ended + 1));
    if (!t)
        return; /* a refresh may show it stale once: no worse */
    a->jobs_ended = t;
    t[a->n_jobs_ended] = (JobEnded) { .volume = strdup(volume), .seq = a->job_seq };
    if (t[a->n_jobs_ended].volume)
        a->n_jobs_ended++;
}

/* A job ended: its volumes' cached entries are newer than any observation
 * started before now (agent-volumes.c keeps them over such a one). */
static void mark_job_seq(Agent *a, const VolumeJob *j, const ApplyResult *res) {
    a->job_seq++;
    if (!j->volume)
        a->job_all_seq = a->job_seq;
    else
        job_ended_on(a, j->volume);
    for (size_t i = 0; res && i < res->n_volumes; i++)
        job_ended_on(a, res->volumes[i].volume);
}

bool agent_jobs_ended_since(Agent *a, const char *volume, uint64_t seq) {
    if (a->job_all_seq > seq)
        return true;
    for (size_t i = 0; i < a->n_jobs_ended; i++)
        if (streq(a->jobs_ended[i].volume, volume))
            return a->jobs_ended[i].seq > seq;
    return false;
}

size_t agent_jobs_count(Agent *a) {
    size_t n = 0;
    for (VolumeJob *j = a->jobs; j; j = j->next)
        n++;
    return n;
}

static void job_free(VolumeJob *j) {
    record_saver_waiter_cancel(j->save_wait);
    sd_event_source_disable_unref(j->failed);
    free(j->start_message);
    worker_free(j->worker);
    free(j->op);
    json_object_put(j->args);
    free(j->volume);
    api_operation_unref(j->operation);
    free(j);
}

static bool conflicts(const VolumeJob *x, const VolumeJob *y) {
    return !x->volume || !y->volume || streq(x->volume, y->volume);
}

static void schedule(Agent *a);

static void unlink_job(Agent *a, VolumeJob *j) {
    for (VolumeJob **p = &a->jobs; *p; p = &(*p)->next)
        if (*p == j) {
            *p = j->next;
            return;
        }
}

static void on_saved(int error, void *userdata) {
    VolumeJob *j = userdata;
    j->save_wait = NULL;
    if (error == -ECANCELED)
        return; /* the saver is being freed (the job is, too) */
    if (error < 0)
        log_error_errno(error, "volume %s: the record %s could not be saved for the %s worker: %m",
                        j->volume ?: "-", j->agent->engine->record_path, j->op);
    worker_answer_save(j->worker, error);
}

static int on_save(Worker *w, const char *name, VolumeRecord *v, void *userdata) {
    VolumeJob *j = userdata;
    Agent *a = j->agent;
    StateRecord *record = agent_record(a);
    int r;
    if (v) {
        r = state_record_put_volume(record, v);
        if (r < 0) {
            volume_record_free(v);
            return r;
        }
    } else
        (void) state_record_remove_volume(record, name);
    /* Off the loop: the worker waits (a UUID must be on disk before its
     * mkfs), the API does not. */
    record_saver_waiter_cancel(j->save_wait); /* one at a time; a broken worker may not wait */
    j->save_wait = NULL;
    r = record_saver_submit(a->saver, record);
    if (r >= 0)
        r = agent_when_saved(a, on_saved, j, &j->save_wait);
    if (r < 0) {
        log_error_errno(r, "volume %s: cannot save the record %s for the %s worker: %m", name,
                        a->engine->record_path, j->op);
        return r;
    }
    return WORKER_SAVE_PENDING;
}

static void on_progress(Worker *w, const char *volume, const ApplyStepResult *step, bool done, void *userdata) {
    VolumeJob *j = userdata;
    if (!j->operation)
        return;
    if (!done)
        j->step = api_operation_step(j->operation, "%s: %s", volume ?: "?", step->description ?: "");
    else if (j->step >= 0) {
        api_operation_step_done(j->operation, j->step, step->error, step->message ? "%s" : NULL,
                                step->message ?: "");
        j->step = -1;
    }
}

static void log_result(const ApplyResult *res) {
    for (size_t i = 0; res && i < res->n_volumes; i++) {
        const ApplyVolumeResult *v = &res->volumes[i];
        for (size_t k = 0; k < v->n_steps; k++) {
            const ApplyStepResult *s = &v->steps[k];
            if (s->error < 0)
                log_volume(LOG_ERR, v->volume, NULL, "volume %s: %s: failed: %s", v->volume, s->description,
                           s->message ? s->message : strerror(-s->error));
            else if (s->changed)
                log_volume(LOG_INFO, v->volume, NULL, "volume %s: %s%s%s", v->volume, s->description,
                           s->message ? ": " : "", s->message ? s->message : "");
        }
        for (char **n = v->notes; n && *n; n++)
            log_volume(LOG_WARNING, v->volume, NULL, "volume %s: %s", v->volume, *n);
        switch (v->outcome) {
        case APPLY_OUTCOME_FAILED:
            log_error("volume %s: failed%s: %s", v->volume, v->rolled_back ? " (rolled back)" : "",
                      v->message ? v->message : strerror(-v->error));
            break;
        case APPLY_OUTCOME_REFUSED:
            log_error("volume %s: refused, left untouched: %s", v->volume, v->message ? v->message : "");
            break;
        case APPLY_OUTCOME_CHANGED:
            log_info("volume %s: up (changed)", v->volume);
            break;
        default:
            log_debug("volume %s: up (unchanged)", v->volume);
        }
    }
}

/* The job's observation replaces the cached entries of its volumes (of
 * all, for a job on all): another job may have changed the others since
 * this worker looked, so their cached entries are kept. */
typedef struct JobMerge {
    const char *volume;
    const ApplyResult *res;
} JobMerge;

static bool job_keeps_cached(const char *name, void *userdata) {
    const JobMerge *m = userdata;
    return !streq(name, m->volume) && !apply_result_find(m->res, name);
}

static void merge_observation(Agent *a, VolumeJob *j, Observation *obs, const ApplyResult *res) {
    JobMerge m = { .volume = j->volume, .res = res };
    (void) engine_merge_observation(a->engine, obs, !j->volume, j->volume ? job_keeps_cached : NULL, &m);
}

static void on_done(Worker *w, int error, const char *message, ApplyResult *res, Observation *obs, json_object *extra,
                    void *userdata) {
    VolumeJob *j = userdata;
    Agent *a = j->agent;
    usec_t took = now_usec(CLOCK_MONOTONIC) - j->started;
    log_result(res);
    if (error < 0)
        log_error("%s job%s%s: %s", j->op, j->volume ? " on " : "", j->volume ?: "", message ?: strerror(-error));
    else
        log_debug("%s job%s%s done in %llu ms", j->op, j->volume ? " on " : "", j->volume ?: "",
                  (unsigned long long) (took / USEC_PER_MSEC));
    merge_observation(a, j, obs, res);
    mark_job_seq(a, j, res);
    unlink_job(a, j);
    if (j->done)
        j->done(a, error, message, res, extra, j->userdata);
    /* The done callback borrowed res: merged into volume_results here, or
     * (AGENT_JOB_OWN_RESULT) only its caller's, and freed. */
    if (res && !(j->flags & AGENT_JOB_OWN_RESULT)) {
        ApplyResult *copy = res;
        if (apply_result_merge(a->volume_results, &copy) < 0)
            apply_result_free(copy);
    } else
        apply_result_free(res);
    json_object_put(extra);
    job_free(j);
    agent_volumes_changed(a);
    if (a->exit_after_jobs && !a->jobs)
        agent_exit_when_idle(a);
    else
        schedule(a);
}

static int deliver_start_failure(sd_event_source *source, void *userdata) {
    VolumeJob *j = userdata;
    (void) source;
    j->failed = sd_event_source_disable_unref(j->failed);
    on_done(NULL, j->start_error, j->start_message, NULL, NULL, NULL, j);
    return 0;
}

static void start_job(Agent *a, VolumeJob *j) {
    WorkerRequest req = { .op = j->op, .layout = agent_layout(a), .record = agent_record(a), .args = j->args };
    WorkerCallbacks cb = { .on_save = on_save, .on_progress = on_progress, .on_done = on_done };
    j->started = now_usec(CLOCK_MONOTONIC);
    int r = worker_start(a->event, AGENT_SELF_EXE, &req, &cb, j, &j->worker);
    if (r < 0) {
        /* It never ran: its caller learns it as a failure, but from the
         * loop, never from inside agent_job_submit() or schedule(). A
         * caller still linking up what it submitted (a carve and its
         * creates, a growth decision) must not see its done callback run
         * and free its state under it. */
        j->start_error = r;
        if (asprintf(&j->start_message, "cannot start the %s worker: %s", j->op, strerror(-r)) < 0)
            j->start_message = NULL;
        int q = sd_event_add_defer(a->event, &j->failed, deliver_start_failure, j);
        if (q < 0) {
            /* Nothing to deliver it from: drop it without a callback, so
             * it never blocks the queue; its caller's state stays as it
             * was (an operation without an end, logged here). */
            log_error("%s job%s%s: %s; and cannot defer its failure: %s", j->op, j->volume ? " on " : "",
                      j->volume ?: "", j->start_message ?: strerror(-r), strerror(-q));
            unlink_job(a, j);
            job_free(j);
        }
        return;
    }
    log_debug("%s job%s%s: worker pid %d", j->op, j->volume ? " on " : "", j->volume ?: "",
              (int) worker_pid(j->worker));
}

/* The first queued job that conflicts with no job before it, running or
 * queued (so jobs on one volume run in the order they came). */
static VolumeJob *next_startable(Agent *a) {
    for (VolumeJob *j = a->jobs; j; j = j->next) {
        if (j->worker || j->failed)
            continue;
        bool blocked = false;
        for (VolumeJob *k = a->jobs; k != j; k = k->next)
            if (conflicts(j, k)) {
                blocked = true;
                break;
            }
        if (!blocked)
            return j;
    }
    return NULL;
}

/* One start per loop iteration: a start (the request with the layout and
 * the record, a fork) takes milliseconds, and eight creates that each
 * carve arrive in one burst; started in one go they held every API
 * answer for tens of milliseconds. Between two starts the API's sources,
 * of higher priority, are served. */
static int on_jobs_start(sd_event_source *source, void *userdata) {
    Agent *a = userdata;
    VolumeJob *j = next_startable(a);
    if (j)
        start_job(a, j);
    if (!next_startable(a))
        (void) sd_event_source_set_enabled(source, SD_EVENT_OFF);
    return 0;
}

static void schedule(Agent *a) {
    if (!next_startable(a))
        return;
    if (!a->jobs_start) {
        int r = sd_event_add_defer(a->event, &a->jobs_start, on_jobs_start, a);
        if (r < 0) {
            /* Cannot defer: start them here, as before. */
            log_warning_errno(r, "Cannot defer job starts, starting them at once: %m");
            for (VolumeJob *j; (j = next_startable(a));)
                start_job(a, j);
            return;
        }
        (void) sd_event_source_set_description(a->jobs_start, "jobs-start");
    }
    (void) sd_event_source_set_enabled(a->jobs_start, SD_EVENT_ON);
}

int agent_job_submit(Agent *a, const char *op, json_object *args, const char *volume, ApiOperation *operation,
                     VolumeJobDone done, void *userdata) {
    return agent_job_submit_full(a, op, args, volume, operation, 0, done, userdata);
}

int agent_job_submit_full(Agent *a, const char *op, json_object *args, const char *volume, ApiOperation *operation,
                          unsigned flags, VolumeJobDone done, void *userdata) {
    VolumeJob *j = calloc(1, sizeof(*j));
    if (!j) {
        json_object_put(args);
        return -ENOMEM;
    }
    *j = (VolumeJob) {
        .agent = a,
        .op = strdup(op),
        .args = args,
        .volume = volume ? strdup(volume) : NULL,
        .operation = api_operation_ref(operation),
        .step = -1,
        .done = done,
        .userdata = userdata,
        .flags = flags,
    };
    if (!j->op || (volume && !j->volume)) {
        job_free(j);
        return -ENOMEM;
    }
    VolumeJob **tail = &a->jobs;
    while (*tail)
        tail = &(*tail)->next;
    *tail = j;
    schedule(a);
    return 0;
}

void agent_jobs_abandon(Agent *a) {
    a->jobs_start = sd_event_source_disable_unref(a->jobs_start);
    for (size_t i = 0; i < a->n_jobs_ended; i++)
        free(a->jobs_ended[i].volume);
    a->jobs_ended = mfree(a->jobs_ended);
    a->n_jobs_ended = 0;
    while (a->jobs) {
        VolumeJob *j = a->jobs;
        a->jobs = j->next;
        if (j->worker)
            log_warning("%s job%s%s abandoned (worker pid %d killed)", j->op, j->volume ? " on " : "",
                        j->volume ?: "", (int) worker_pid(j->worker));
        job_free(j);
    }
}
