/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The agent's lifecycle: open the engine on the layout's root (the lock,
 * the record), serve the API at once (reads; changes once ready), bring the
 * volumes up in a worker, then re-adopt or start the workspaces and say
 * READY=1. SIGHUP reloads (a bad layout is refused and the old one keeps
 * running); SIGTERM exits and leaves the workspaces serving for the next
 * agent to re-adopt (unless workspace.on_agent_stop is stop); SIGINT stops
 * every workspace gracefully and exits; SIGUSR2 always leaves them.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>

#include "json-util.h"
#include "agent.h"
#include "child.h"
#include "log.h"
#include "place-workspaces.h"
#include "util.h"
#include "volume-report.h"

/* The modules, in the order they are started, asked and shown. */
static const AgentModule *const agent_modules[] = {
    &agent_capacity_module, &agent_gc_module,    &agent_cgroups_module,    &agent_vdo_module,
    &agent_probe_module,    &agent_check_module, &agent_workspaces_module, &agent_quota_module,
};

#define FOREACH_MODULE(m) for (const AgentModule *const *m = agent_modules; m < agent_modules + ELEMENTSOF(agent_modules); m++)

/* Starts the modules of one phase: at run, or once the volumes are up. */
static void modules_start(Agent *a, bool when_up) {
    FOREACH_MODULE(m)
        if ((*m)->when_up == when_up && (*m)->start)
            (void) (*m)->start(a);
}

void agent_modules_observed(Agent *a) {
    FOREACH_MODULE(m)
        if ((*m)->observed)
            (*m)->observed(a);
}

const VolumeAssessment *agent_modules_assessment(Agent *a, const char *volume) {
    FOREACH_MODULE(m)
        if ((*m)->assessment)
            return (*m)->assessment(a, volume);
    return NULL;
}

bool agent_modules_flush_cost(Agent *a, const char *volume, usec_t *ret) {
    FOREACH_MODULE(m)
        if ((*m)->flush_cost)
            return (*m)->flush_cost(a, volume, ret);
    return false;
}

void agent_modules_daemon_running(Agent *a, const char *id, pid_t pid) {
    FOREACH_MODULE(m)
        if ((*m)->daemon_running)
            (*m)->daemon_running(a, id, pid);
}

void agent_modules_workspace_removed(Agent *a, const char *id) {
    FOREACH_MODULE(m)
        if ((*m)->workspace_removed)
            (*m)->workspace_removed(a, id);
}

void agent_modules_volume_json(Agent *a, const VolumeObservation *v, json_object *o) {
    FOREACH_MODULE(m)
        if ((*m)->volume_json)
            (*m)->volume_json(a, v, o);
}

json_object *agent_problems(Agent *a, VolumeHealth *ret_health) {
    ProblemInputs in = {
        .observation = a->engine->observation,
        .record = agent_record(a),
        .results = a->volume_results,
        .root = agent_layout(a)->root,
        .state_pool = layout_pool(agent_layout(a), POOL_STATE),
        .record_save_error = record_saver_last_error(a->saver),
        .record_path = a->engine->record_path,
        .reload_error = a->last_reload_error,
    };
    json_object *arr = NULL;
    int r = 0;
    FOREACH_MODULE(m)
        if ((*m)->problems && (r = (*m)->problems(a, &in)) < 0)
            break;
    if (r >= 0)
        r = capacity_problems(&in, &arr, ret_health);
    /* What the modules handed over is ours to free. */
    free((ProblemVolume *) in.volumes);
    free((ProblemWorkspace *) in.workspaces);
    if (r >= 0)
        return arr;
    /* Out of memory: say so rather than report a healthy host. */
    log_oom();
    *ret_health = VOLUME_HEALTH_DEGRADED;
    return json_object_new_array();
}

/* The agent's health: a failed volume or workspace makes the host
 * degraded, not failed (the rest serves). */
static const char *health_word(VolumeHealth h) {
    return h == VOLUME_HEALTH_OK ? "ok" : h == VOLUME_HEALTH_WARNING ? "warning" : "degraded";
}

/* Volumes by health (of those the layout declares or the record holds),
 * and how many are in service. */
static json_object *status_volumes_json(Agent *a) {
    size_t total = 0, counts[_VOLUME_HEALTH_MAX] = {};
    const Observation *obs = a->engine->observation;
    for (size_t i = 0; obs && i < obs->n; i++) {
        const VolumeObservation *vo = &obs->volumes[i];
        if (!vo->declared && !state_record_find_volume(agent_record(a), vo->name))
            continue;
        total++;
        VolumeHealth h = volume_health_from_string(agent_volume_health(a, vo, NULL));
        if (h >= 0)
            counts[h]++;
    }
    json_object *v = json_object_new_object();
    json_object_object_add(v, "total", json_object_new_int64((int64_t) total));
    json_object_object_add(v, "up", json_object_new_int64((int64_t) agent_volumes_up(a)));
    for (VolumeHealth h = 0; h < _VOLUME_HEALTH_MAX; h++)
        json_object_object_add(v, volume_health_to_string(h), json_object_new_int64((int64_t) counts[h]));
    return v;
}

/* The daemons by supervision state. */
static json_object *status_workspaces_json(Agent *a) {
    size_t counts[_SUPERVISOR_STATE_MAX] = {}, n = a->supervisor ? supervisor_count(a->supervisor) : 0;
    for (size_t i = 0; i < n; i++) {
        WorkspaceStatus st;
        if (supervisor_get_status_by_index(a->supervisor, i, &st) >= 0 && st.state >= 0 &&
            st.state < _SUPERVISOR_STATE_MAX)
            counts[st.state]++;
    }
    json_object *w = json_object_new_object(), *by = json_object_new_object();
    json_object_object_add(w, "total", json_object_new_int64((int64_t) n));
    json_object_object_add(w, "running", json_object_new_int64((int64_t) counts[SUPERVISOR_RUNNING]));
    json_object_object_add(w, "failed", json_object_new_int64((int64_t) counts[SUPERVISOR_FAILED]));
    for (SupervisorState s = 0; s < _SUPERVISOR_STATE_MAX; s++)
        json_object_object_add(by, supervisor_state_to_string(s), json_object_new_int64((int64_t) counts[s]));
    json_object_object_add(w, "by_state", by);
    return w;
}

json_object *agent_status_json(Agent *a) {
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    usec_t now = now_usec(CLOCK_MONOTONIC);
    json_object_object_add(o, "version", json_object_new_string(LAYOUTD_VERSION));
    json_object_object_add(o, "state",
                           json_object_new_string(a->stopping ? "stopping" : a->ready ? "ready" : "starting"));
    json_object_object_add(o, "pid", json_object_new_int(getpid()));
    json_object_object_add(o, "uptime_sec", json_object_new_int64((int64_t) ((now - a->started_mono) / USEC_PER_SEC)));
    json_object *l = json_object_new_object();
    json_object_object_add(l, "path", json_string_or_null(a->engine->layout_path));
    json_object_object_add(l, "hash", json_string_or_null(a->engine->layout_hash));
    json_object_object_add(l, "root", json_string_or_null(agent_layout(a)->root));
    json_object_object_add(o, "layout", l);
    json_object_object_add(o, "generation", json_object_new_uint64(a->generation));
    json_object_object_add(o, "volumes", status_volumes_json(a));
    json_object_object_add(o, "workspaces", status_workspaces_json(a));
    json_object_object_add(o, "jobs", json_object_new_int64((int64_t) agent_jobs_count(a)));
    json_object *e = NULL;
    if (a->last_reload_error) {
        e = json_object_new_object();
        json_object_object_add(e, "message", json_object_new_string(a->last_reload_error));
        json_object_object_add(e, "at", json_object_new_int64((int64_t) (a->last_reload_at / USEC_PER_SEC)));
    }
    json_object_object_add(o, "last_reload_error", e);
    VolumeHealth worst;
    json_object *p = agent_problems(a, &worst);
    json_object_object_add(o, "health", json_object_new_string(health_word(worst)));
    json_object_object_add(o, "problems", p);
    FOREACH_MODULE(m)
        if ((*m)->status_json)
            (*m)->status_json(a, o);
    return o;
}

json_object *agent_health_json(Agent *a, unsigned *ret_status) {
    VolumeHealth worst;
    json_object *p = agent_problems(a, &worst);
    /* Warnings are for people, not for load balancers. */
    bool ready = a->ready && !a->stopping, healthy = worst <= VOLUME_HEALTH_WARNING;
    json_object *o = json_object_new_object();
    if (!o) {
        json_object_put(p);
        return NULL;
    }
    json_object_object_add(o, "health", json_object_new_string(ready ? health_word(worst)
                                                               : a->stopping ? "stopping" : "starting"));
    json_object_object_add(o, "problems", p);
    *ret_status = healthy && ready ? 200 : 503;
    return o;
}

int agent_metrics(Agent *a, MetricsWriter *w) {
    const Observation *obs = a->engine->observation;
    StateRecord *record = agent_record(a);
    Observation empty = {};

    (void) metrics_writer_family(w, "layoutd_info", METRIC_GAUGE, "layoutd version and the layout's hash");
    (void) metrics_writer_sample(w, (const char *const[]) { "version", LAYOUTD_VERSION, "layout_hash",
                                                            a->engine->layout_hash, NULL },
                                 1);
    /* A value, not a label: a label would start a new series at every
     * reload. */
    (void) metrics_writer_family(w, "layoutd_layout_generation", METRIC_GAUGE,
                                 "The layout's generation: 1 at start, one more at every applied reload");
    (void) metrics_writer_sample(w, NULL, (double) a->generation);
    (void) metrics_write_process(w);
    (void) metrics_writer_family(w, "layoutd_uptime_seconds", METRIC_GAUGE, "Seconds since the agent started");
    (void) metrics_writer_sample(w, NULL, (double) (now_usec(CLOCK_MONOTONIC) - a->started_mono) / USEC_PER_SEC);
    (void) metrics_writer_family(w, "layoutd_reload_error", METRIC_GAUGE, "1 when the last reload was refused");
    (void) metrics_writer_sample(w, NULL, a->last_reload_error ? 1 : 0);
    (void) metrics_writer_family(w, "layoutd_jobs", METRIC_GAUGE, "Volume jobs running or queued (workers)");
    (void) metrics_writer_sample(w, NULL, (double) agent_jobs_count(a));
    RecordSaverStats rs;
    record_saver_stats(a->saver, &rs);
    (void) metrics_writer_family(w, "layoutd_record_writes_total", METRIC_COUNTER,
                                 "Writes of the state record (by the saver thread) since the agent started");
    (void) metrics_writer_sample(w, NULL, (double) rs.writes);
    (void) metrics_writer_family(w, "layoutd_record_write_failures_total", METRIC_COUNTER,
                                 "Writes of the state record that failed since the agent started");
    (void) metrics_writer_sample(w, NULL, (double) rs.failures);
    (void) metrics_writer_family(w, "layoutd_record_write_max_seconds", METRIC_GAUGE,
                                 "The longest write of the state record (write, fsync, rename, directory fsync) "
                                 "since the agent started");
    (void) metrics_writer_sample(w, NULL, (double) rs.max_write_usec / USEC_PER_SEC);
    (void) metrics_writer_family(w, "layoutd_record_unsaved", METRIC_GAUGE,
                                 "1 while the last write of the state record failed (changes are in memory only)");
    (void) metrics_writer_sample(w, NULL, record_saver_last_error(a->saver) < 0 ? 1 : 0);

    volume_report_metrics(obs ?: &empty, w);
    (void) metrics_writer_family(w, "layoutd_volume_workspaces", METRIC_GAUGE,
                                 "Active workspaces placed on the volume (its flush scope)");
    for (size_t i = 0; obs && i < obs->n; i++) {
        const VolumeObservation *v = &obs->volumes[i];
        (void) metrics_writer_sample(w, (const char *const[]) { "volume", v->name, "pool", pool_role_to_string(v->role),
                                                                "backend", backend_to_string(v->backend), NULL },
                                     (double) state_record_count_workspaces(record, v->name));
    }
    (void) metrics_writer_family(w, "layoutd_volume_health", METRIC_GAUGE,
                                 "1 for the volume's current health (ok, warning, degraded, failed)");
    for (size_t i = 0; obs && i < obs->n; i++) {
        const VolumeObservation *v = &obs->volumes[i];
        const char *h = agent_volume_health(a, v, NULL);
        for (VolumeHealth k = 0; k < _VOLUME_HEALTH_MAX; k++)
            (void) metrics_writer_sample(w, (const char *const[]) { "volume", v->name, "health",
                                                                    volume_health_to_string(k), NULL },
                                         streq(h, volume_health_to_string(k)));
    }
    for (size_t i = 0; i < ELEMENTSOF(agent_modules); i++)
        if (agent_modules[i]->metrics)
            agent_modules[i]->metrics(a, w);

    return 0;
}


int agent_new(const AgentOptions *o, Agent **ret) {
    _cleanup_(agent_freep) Agent *a = calloc(1, sizeof(Agent));
    _cleanup_free_ char *error = NULL;
    int r;

    if (!a)
        return log_error_errno(ENOMEM, "Out of memory");
    a->options = *o;
    a->started_mono = now_usec(CLOCK_MONOTONIC);

    /* The same lock layoutctl's changing verbs take: while the agent runs
     * it owns the volumes. A record we cannot read is never overwritten:
     * refuse to start and let the operator look (docs/operations.md). */
    EngineOptions eo = { .layout_path = o->layout, .root = o->root, .lock = true, .create_root = true };
    r = engine_open(&eo, &a->engine, &error);
    if (r == -EINVAL || r == -ENOENT || r == -ENOTUNIQ)
        return log_error_errno(r, "Invalid layout, not starting:\n%s", error ?: "(out of memory)");
    if (r < 0)
        return log_error_errno(r, "Not starting: %s", error ?: strerror(-r));
    a->generation = 1;
    r = apply_result_new(&a->volume_results);
    if (r < 0)
        return log_error_errno(r, "Out of memory");

    r = sd_event_default(&a->event);
    if (r < 0)
        return log_error_errno(r, "Failed to allocate the event loop: %m");
    r = record_saver_new(a->event, a->engine->record_path, &a->saver);
    if (r < 0)
        return log_error_errno(r, "Failed to start the record's writer: %m");
    *ret = TAKE_PTR(a);
    return 0;
}

Agent *agent_free(Agent *a) {
    if (!a)
        return NULL;
    /* Last started, first gone. */
    for (size_t i = ELEMENTSOF(agent_modules); i > 0; i--)
        if (agent_modules[i - 1]->free)
            agent_modules[i - 1]->free(a);
    agent_volumes_unwatch(a);
    agent_jobs_abandon(a);
    agent_api_stop(a);
    /* Leaves daemons running: a stop was done by SIGTERM before, and a
     * detach (SIGUSR2) or crash wants them kept for re-adoption. */
    a->supervisor = supervisor_free(a->supervisor);
    /* After every owner of a waiter is gone; writes what is pending. */
    record_saver_waiter_cancel(a->exit_wait);
    a->saver = record_saver_free(a->saver);
    apply_result_free(a->volume_results);
    strv_free(a->reload_notes);
    strv_free(a->gone_volumes);
    engine_free(a->engine);
    free(a->last_reload_error);
    free(a->last_status);
    free(a->socket_path);
    free(a->readonly_socket_path);
    /* Children killed on the way out (a sweep, a job) that the loop did
     * not get to reap: their exit sources hold the loop. */
    child_orphans_free();
    sd_event_unref(a->event);
    free(a);
    return NULL;
}

void agent_event(Agent *a, const char *type, json_object *fields) {
    /* Before the API serves (and after it stopped) nobody can read the
     * stream: the event is dropped, as the log has it already. */
    if (a->api)
        (void) api_event_emit(a->api, type, fields);
    else
        json_object_put(fields);
}

void agent_persist(Agent *a) {
    int r = record_saver_submit(a->saver, agent_record(a));
    if (r < 0)
        log_error_errno(r, "Failed to save the record %s, the change is kept in memory only: %m",
                        a->engine->record_path);
}

int agent_when_saved(Agent *a, RecordSaverDone done, void *userdata, RecordSaverWaiter **ret) {
    return record_saver_wait(a->saver, done, userdata, ret);
}

typedef struct SavedAnswer {
    ApiOperation *op;
    unsigned status;
    json_object *result;
} SavedAnswer;

static void answer_saved(int error, void *userdata) {
    SavedAnswer *s = userdata;
    if (error == -ECANCELED) /* the agent is going away */
        json_object_put(s->result);
    else if (error < 0) {
        ApiError e = {};
        api_fail(&e, error, API_CODE_RECORD_UNSAVED,
                 "done, but the state record could not be saved: %s; the change is kept in memory and "
                 "saved with the next one",
                 strerror(-error));
        api_operation_fail(s->op, &e);
        json_object_put(s->result);
    } else
        api_operation_succeed(s->op, s->status, s->result);
    api_operation_unref(s->op);
    free(s);
}

void agent_operation_succeed_saved(Agent *a, ApiOperation *op, unsigned status, json_object *result) {
    SavedAnswer *s = op ? calloc(1, sizeof(*s)) : NULL;
    if (s) {
        *s = (SavedAnswer) { .op = api_operation_ref(op), .status = status, .result = result };
        if (agent_when_saved(a, answer_saved, s, NULL) >= 0)
            return;
        api_operation_unref(s->op);
        free(s);
    }
    /* Out of memory: answer now rather than never. */
    if (op)
        api_operation_succeed(op, status, result);
    else
        json_object_put(result);
}

void agent_update_status(Agent *a) {
    size_t up = agent_volumes_up(a), total = agent_volumes_total(a);
    size_t n = a->supervisor ? supervisor_count(a->supervisor) : 0, running = 0;
    for (size_t i = 0; i < n; i++) {
        WorkspaceStatus st;
        if (supervisor_get_status_by_index(a->supervisor, i, &st) >= 0 && st.state == SUPERVISOR_RUNNING)
            running++;
    }
    char status[256];
    snprintf(status, sizeof status, "STATUS=%s: %zu/%zu volumes up, %zu/%zu workspaces running%s",
             a->stopping ? "Stopping" : a->ready ? "Ready" : "Starting", up, total, running, n,
             a->last_reload_error ? " (last reload failed)" : "");
    /* Called on every observation (four times a second while volumes
     * fill): tell systemd only what changed. */
    if (a->last_status && streq(a->last_status, status))
        return;
    free(a->last_status);
    a->last_status = strdup(status);
    (void) sd_notify(false, status);
}

/* A first carve (mkfs of every volume, a VDO format on a large device)
 * can outlast the unit's start timeout on a slow host. While the volumes
 * come up in the worker (the loop is alive: it runs this), systemd is told
 * to wait START_EXTEND_BY more, every START_EXTEND_EVERY, but no longer
 * than START_EXTEND_MAX after the start: a worker stuck on a dead device
 * must still fail the start. */
#define START_EXTEND_EVERY (20 * USEC_PER_SEC)
#define START_EXTEND_BY (60 * USEC_PER_SEC)
#define START_EXTEND_MAX (30 * 60 * USEC_PER_SEC)

static int on_start_extend(sd_event_source *s, uint64_t usec, void *userdata) {
    Agent *a = userdata;
    if (a->ready || a->stopping || usec >= a->start_extend_until)
        return sd_event_source_set_enabled(s, SD_EVENT_OFF);
    (void) sd_notifyf(false, "EXTEND_TIMEOUT_USEC=%" PRIu64, (uint64_t) START_EXTEND_BY);
    (void) sd_event_source_set_time(s, usec + START_EXTEND_EVERY);
    return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

/* ---- reload ------------------------------------------------------------ */

typedef struct ReloadJob {
    ApiOperation *op;
    bool changed;
} ReloadJob;

static json_object *reload_answer(Agent *a, bool changed, const ApplyResult *res) {
    json_object *o = json_object_new_object();
    json_object_object_add(o, "reloaded", json_object_new_boolean(true));
    json_object_object_add(o, "changed", json_object_new_boolean(changed));
    json_object_object_add(o, "generation", json_object_new_uint64(a->generation));
    json_object_object_add(o, "layout_hash", json_object_new_string(a->engine->layout_hash));
    json_object *notes = json_object_new_array();
    for (char **n = a->reload_notes; n && *n; n++)
        json_object_array_add(notes, json_object_new_string(*n));
    json_object_object_add(o, "refused", notes);
    json_object *j = NULL;
    if (res && apply_result_to_json(res, &j) >= 0)
        json_object_object_add(o, "volumes", j);
    return o;
}

static void on_reload_applied(Agent *a, int error, const char *message, ApplyResult *res, json_object *extra,
                              void *userdata) {
    ReloadJob *job = userdata;
    if (error < 0)
        log_error("Reload: applying the new layout's volumes failed: %s", message ?: strerror(-error));
    else if (res && !apply_result_ok(res))
        log_warning("Reload: some volumes of the new layout are not in service (see /v1/volumes)");
    FOREACH_MODULE(m)
        if ((*m)->layout_changed)
            (*m)->layout_changed(a);
        else if ((*m)->when_up && (*m)->start)
            (void) (*m)->start(a);
    (void) sd_notify(false, "READY=1");
    agent_update_status(a);
    if (job->op) {
        if (error < 0) {
            ApiError e = {};
            api_fail(&e, error, API_CODE_APPLY_FAILED, "The layout was loaded but applying it failed: %s",
                     message ?: strerror(-error));
            api_operation_fail(job->op, &e);
        } else
            api_operation_succeed(job->op, 200, reload_answer(a, job->changed, res));
        api_operation_unref(job->op);
    }
    free(job);
}

/* What the new layout's plan refuses without blocking (a shrink): the
 * operator asked for it, so the answer says it was not done. */
static void collect_reload_notes(Agent *a, const Layout *l) {
    _cleanup_(plan_freep) Plan *plan = NULL;
    a->reload_notes = strv_free(a->reload_notes);
    if (!a->engine->observation || volumes_plan(l, agent_record(a), a->engine->observation, &plan) < 0)
        return;
    for (size_t i = 0; i < plan->n_steps; i++) {
        const PlanStep *s = &plan->steps[i];
        if (s->kind != PLAN_STEP_REFUSE || !s->reason || s->blocks || streq(s->reason, "not-declared"))
            continue;
        _cleanup_free_ char *t = NULL;
        if (asprintf(&t, "%s: %s", s->volume, s->description) >= 0) {
            (void) strv_extend(&a->reload_notes, t);
            log_warning("Reload: %s", t);
        }
    }
}

/* Recorded volumes that are not in service: a reload of the same layout
 * tries them again (the operator put a missing image back, say). */
static size_t recorded_volumes_down(Agent *a) {
    StateRecord *record = agent_record(a);
    size_t n = 0;
    for (size_t i = 0; i < record->n_volumes; i++) {
        const VolumeObservation *o = agent_volume(a, record->volumes[i]->name);
        if (!o || !volume_observation_is_up(o))
            n++;
    }
    return n;
}

int agent_reload(Agent *a, ApiOperation *op, char **ret_error) {
    _cleanup_(layout_freep) Layout *l = NULL;
    _cleanup_free_ char *path = NULL, *error = NULL, *hash = NULL;
    int r;

    a->last_reload_at = now_usec(CLOCK_REALTIME);
    (void) sd_notifyf(false, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64, now_usec(CLOCK_MONOTONIC));
    r = engine_load_layout(a->options.layout, a->options.root, &l, &path, &error);
    if (r >= 0 && !streq(l->root, agent_layout(a)->root)) {
        /* Moving the root would orphan every volume: refuse it. */
        error = mfree(error);
        if (asprintf(&error, "%s: root changed from %s to %s; a running agent cannot move its volumes", path,
                     agent_layout(a)->root, l->root) < 0)
            error = NULL;
        r = -EINVAL;
    }
    if (r >= 0)
        r = layout_hash(l, &hash);
    if (r < 0) {
        free(a->last_reload_error);
        a->last_reload_error = strdup(error ?: "invalid layout");
        log_context(LOG_ERR, 0, &(const LogContext) { .message_id = LAYOUTD_MESSAGE_RELOAD_REFUSED },
                    "Reload refused, the old layout keeps running:\n%s", error ?: "(out of memory)");
        json_object *f = json_object_new_object();
        json_object_object_add(f, "message", json_object_new_string(error ?: "invalid layout"));
        agent_event(a, "reload.refused", f);
        (void) sd_notify(false, "READY=1");
        agent_update_status(a);
        if (ret_error)
            *ret_error = TAKE_PTR(error);
        return r;
    }

    bool changed = !streq(hash, a->engine->layout_hash);
    size_t down = changed ? 0 : recorded_volumes_down(a);
    /* Allocated before anything changes: past the swap below, a failure
     * must still tell the modules (on_reload_applied). */
    ReloadJob *job = NULL;
    if ((changed || down > 0) && !(job = calloc(1, sizeof(*job)))) {
        (void) sd_notify(false, "READY=1");
        return -ENOMEM;
    }
    a->last_reload_error = mfree(a->last_reload_error);
    if (changed)
        collect_reload_notes(a, l);
    /* Placement reads the layout afresh on every call; the supervisor
     * holds copies of the daemons' specs, which the workspaces module's
     * layout_changed refreshes once the volume difference is applied. */
    Layout *old = a->engine->layout;
    a->engine->layout = TAKE_PTR(l);
    agent_api_layout_changed(a, &old->api);
    layout_free(old);
    free(a->engine->layout_path);
    a->engine->layout_path = TAKE_PTR(path);
    free(a->engine->layout_hash);
    a->engine->layout_hash = TAKE_PTR(hash);
    if (changed)
        a->generation++;
    log_info("Reloaded layout %s (generation %" PRIu64 ", %s%s)", a->engine->layout_path, a->generation,
             changed ? "changed: applying the difference" : "unchanged",
             down ? "; applying it again for the volumes out of service" : "");
    json_object *f = json_object_new_object();
    json_object_object_add(f, "generation", json_object_new_uint64(a->generation));
    json_object_object_add(f, "changed", json_object_new_boolean(changed));
    agent_event(a, "reload.accepted", f);
    if (!changed && down == 0) {
        if (op)
            api_operation_succeed(op, 200, reload_answer(a, false, NULL));
        (void) sd_notify(false, "READY=1");
        agent_update_status(a);
        return 0;
    }
    *job = (ReloadJob) { .op = api_operation_ref(op), .changed = changed };
    r = agent_job_submit(a, WORKER_OP_APPLY, NULL, NULL, op, on_reload_applied, job);
    if (r < 0)
        /* The new layout is in place already: the modules must still be
         * told (the daemons' specs), and the caller gets a 500. */
        on_reload_applied(a, r, "cannot queue the apply", NULL, NULL, job);
    return 1;
}

/* ---- start ------------------------------------------------------------- */

static void on_started(Agent *a, int error, const char *message, ApplyResult *res, json_object *extra,
                       void *userdata) {
    int r;
    a->volumes_started = true;
    if (error < 0)
        log_error("Bringing the volumes up failed: %s", message ?: strerror(-error));
    if (a->stopping)
        return;
    if (!a->options.no_workspaces) {
        _cleanup_free_ char *runtime = NULL;
        if (asprintf(&runtime, "%s/run", agent_layout(a)->root) < 0) {
            log_error_errno(ENOMEM, "Out of memory");
            (void) sd_event_exit(a->event, 1);
            return;
        }
        r = mkdir_p(runtime, 0700);
        if (r >= 0)
            r = supervisor_new(a->event, &agent_supervisor_callbacks, a, runtime, &a->supervisor);
        if (r < 0) {
            log_error_errno(r, "Failed to set up supervision: %m");
            (void) sd_event_exit(a->event, 1);
            return;
        }
    }
    /* With supervision, the workspaces module says ready once they are
     * supervised again (their directories are reconciled in a worker
     * first). */
    modules_start(a, true);
    if (!a->supervisor)
        agent_ready(a);
}

void agent_ready(Agent *a) {
    if (a->ready || a->stopping)
        return;
    a->ready = true;
    api_set_state(a->api, API_STATE_READY);
    (void) sd_notify(false, "READY=1");
    agent_update_status(a);
    log_info("Ready: %zu volume(s) up, %zu workspace(s)", agent_volumes_up(a),
             a->supervisor ? supervisor_count(a->supervisor) : 0);
    agent_event(a, "agent.ready", NULL);
}

/* ---- signals ----------------------------------------------------------- */

static void exit_when_saved(int error, void *userdata) {
    Agent *a = userdata;
    a->exit_wait = NULL;
    if (error == -ECANCELED)
        return; /* the saver is being freed */
    agent_exit_when_idle(a); /* a failed write is logged by the saver */
}

void agent_exit_when_idle(Agent *a) {
    /* A job still running finishes first (its record changes are saved
     * as it goes): a carve cut off mid-mkfs would only be redone later.
     * Then the last saves land, and the answers waiting on them go out. */
    if (agent_jobs_count(a) == 0 && record_saver_idle(a->saver))
        (void) sd_event_exit(a->event, 0);
    else if (agent_jobs_count(a) == 0) {
        if (!a->exit_wait && agent_when_saved(a, exit_when_saved, a, &a->exit_wait) < 0)
            (void) sd_event_exit(a->event, 0); /* record_saver_free() still writes it */
    } else {
        log_info("Waiting for %zu volume job(s) to finish", agent_jobs_count(a));
        a->exit_after_jobs = true;
    }
}

static void on_all_stopped(Supervisor *s, void *userdata) {
    Agent *a = userdata;
    log_info("All workspaces stopped");
    agent_exit_when_idle(a);
}

/* Stops the agent: with stop_workspaces every daemon is stopped first
 * (in parallel, each with its stop_timeout); without, they are left
 * serving for the next agent to re-adopt. Either way a volume job still
 * running finishes first. */
void agent_stop(Agent *a, bool stop_workspaces, const char *why) {
    if (a->stopping) {
        log_notice("Stop already in progress");
        return;
    }
    a->stopping = true;
    (void) sd_notify(false, "STOPPING=1");
    api_set_state(a->api, API_STATE_STOPPING);
    FOREACH_MODULE(m)
        if ((*m)->stop)
            (*m)->stop(a);
    size_t n = a->supervisor ? supervisor_count(a->supervisor) : 0;
    if (!stop_workspaces || n == 0) {
        if (n > 0)
            log_notice("%s: exiting, leaving %zu workspace(s) serving for the next agent to re-adopt", why, n);
        else
            log_info("%s: exiting", why);
        agent_exit_when_idle(a);
        return;
    }
    log_info("%s: stopping every workspace", why);
    usec_t total = agent_layout(a)->workspace.stop_timeout + 5 * USEC_PER_SEC;
    int r = supervisor_stop_all(a->supervisor, total, on_all_stopped, a);
    if (r < 0) {
        log_error_errno(r, "Failed to stop workspaces: %m");
        (void) sd_event_exit(a->event, 1);
    }
}

/* SIGTERM is the service manager's (systemctl stop, restart, an upgrade):
 * the workspaces keep serving unless the layout says on_agent_stop: stop,
 * as Docker's live-restore keeps containers. SIGINT is a person at a
 * terminal pressing Ctrl-C: everything stops. SIGUSR2 always keeps them. */
static int on_stop_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
    Agent *a = userdata;
    char why[64];
    snprintf(why, sizeof why, "Received %s", strsignal((int) si->ssi_signo));
    agent_stop(a, si->ssi_signo == SIGINT || agent_layout(a)->workspace.stop_with_agent, why);
    return 0;
}

static int on_detach_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
    Agent *a = userdata;
    char why[64];
    snprintf(why, sizeof why, "Received %s", strsignal((int) si->ssi_signo));
    agent_stop(a, false, why);
    return 0;
}

static int on_reload_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
    Agent *a = userdata;
    if (a->stopping)
        return 0;
    log_info("Received SIGHUP: reloading the layout");
    _cleanup_(api_operation_unrefp) ApiOperation *op = NULL;
    if (a->api)
        (void) api_operation_new(a->api, API_ROUTE_RELOAD, &op);
    int r = agent_reload(a, op, NULL);
    if (r < 0 && op) {
        ApiError e = {};
        api_fail(&e, r, API_CODE_INVALID_LAYOUT, "%s", a->last_reload_error ?: "invalid layout");
        api_operation_fail(op, &e);
    }
    return 0;
}

int agent_run(Agent *a) {
    sigset_t mask;
    int r;

    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigaddset(&mask, SIGUSR2);
    sigaddset(&mask, SIGCHLD);
    if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
        return log_error_errno(errno, "Failed to block signals: %m");
    /* A daemon closing its end of a log FIFO must not kill us. */
    signal(SIGPIPE, SIG_IGN);

    if ((r = sd_event_add_signal(a->event, NULL, SIGTERM, on_stop_signal, a)) < 0 ||
        (r = sd_event_add_signal(a->event, NULL, SIGINT, on_stop_signal, a)) < 0 ||
        (r = sd_event_add_signal(a->event, NULL, SIGHUP, on_reload_signal, a)) < 0 ||
        (r = sd_event_add_signal(a->event, NULL, SIGUSR2, on_detach_signal, a)) < 0)
        return log_error_errno(r, "Failed to watch signals: %m");
    /* Pings WATCHDOG=1 from the loop itself, so a hung loop stops pinging. */
    r = sd_event_set_watchdog(a->event, true);
    if (r < 0)
        log_warning_errno(r, "Failed to enable the watchdog, ignoring: %m");

    r = agent_api_start(a);
    if (r < 0)
        return r;
    r = agent_volumes_watch(a);
    if (r < 0)
        log_warning_errno(r, "Cannot watch mountinfo, the observation refreshes on a timer only: %m");
    modules_start(a, false);

    log_info("layoutd %s: layout %s (root %s, generation %" PRIu64 ")", LAYOUTD_VERSION, a->engine->layout_path,
             agent_layout(a)->root, a->generation);
    (void) sd_notify(false, "STATUS=Bringing volumes up");
    a->start_extend_until = now_usec(CLOCK_MONOTONIC) + START_EXTEND_MAX;
    r = sd_event_add_time_relative(a->event, NULL, CLOCK_MONOTONIC, START_EXTEND_EVERY, USEC_PER_SEC,
                                   on_start_extend, a);
    if (r < 0)
        log_warning_errno(r, "Cannot extend the start timeout while volumes come up, ignoring: %m");
    /* The volumes come up in a worker; the loop serves reads meanwhile. */
    r = agent_job_submit(a, WORKER_OP_APPLY, NULL, NULL, NULL, on_started, NULL);
    if (r < 0)
        return log_error_errno(r, "Failed to start bringing the volumes up: %m");

    r = sd_event_loop(a->event);
    if (r < 0)
        return log_error_errno(r, "Event loop failed: %m");
    return r;
}
