/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Full volumes, handled before they fill: every observation is judged by
 * the capacity policy (src/capacity), a volume past its pool's
 * growth.threshold gets a grow job (a worker: truncate, loop capacity,
 * resize2fs / xfs_growfs online), and one that cannot grow says why. The
 * 10 s observation is too slow for a package install that makes thousands
 * of files a second, so while a volume may grow, or another is near a
 * threshold, a long-running watch worker samples statvfs four times a
 * second (and says so only when a figure moved).
 */
#include <inttypes.h>
#include <linux/capability.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"
#include "log.h"
#include "util.h"

/* The fast watch: runs while a volume is within this many points of a
 * threshold, sampling at this interval, and lingers this long after. */
#define NEAR_POINTS 15
#define WATCH_INTERVAL (250 * USEC_PER_MSEC)
#define WATCH_LINGER (30 * USEC_PER_SEC)
#define WATCH_RESTART_DELAY (5 * USEC_PER_SEC)
/* A failed grow is retried after 30 s, doubling up to 15 min. */
#define RETRY_FIRST (30 * USEC_PER_SEC)
#define RETRY_MAX (15 * 60 * USEC_PER_SEC)

/* ---- per-volume state ---------------------------------------------------- */

/* What the agent knows of a volume beyond its observation. */
typedef struct VolumeState {
    char *name;
    VolumeAssessment assessment; /* the latest health and its findings */
    bool reported;               /* `reported_health` was logged and sent */
    VolumeHealth reported_health;
    GrowthDecision growth;       /* the latest growth decision */
    const char *refusal_logged;  /* the growth refusal reason last logged */
    bool growing;                /* a grow job is queued or running */
    usec_t retry_at;             /* CLOCK_MONOTONIC: no grow before (backoff) */
    unsigned failures;           /* grows failed in a row */
    char *growth_error;          /* why the last grow failed, or NULL */
    uint64_t grows, grow_failures; /* counters since the agent started */
    uint64_t grown_bytes;
} VolumeState;

struct AgentCapacity {
    VolumeState *states;         /* per observed volume */
    size_t n_states;
    GrowthEnv growth_env;        /* what growth may do here (capabilities) */
    sd_event_source *timer;      /* starts and stops the fast watch */
    Worker *watcher;             /* the watch worker (WORKER_OP_WATCH) */
    char **watch_paths;          /* the mount paths it samples */
    bool watch_near;             /* a volume is near a threshold */
    bool watch_ended;            /* the watch worker exited on its own */
    usec_t watch_quiet_since;    /* CLOCK_MONOTONIC: no volume near since */
};

static VolumeState *agent_volume_state(Agent *a, const char *name) {
    AgentCapacity *c = a->capacity;
    for (size_t i = 0; c && i < c->n_states; i++)
        if (streq(c->states[i].name, name))
            return &c->states[i];
    return NULL;
}

static const VolumeAssessment *capacity_assessment(Agent *a, const char *volume) {
    const VolumeState *s = agent_volume_state(a, volume);
    return s ? &s->assessment : NULL;
}

static VolumeState *state_get(Agent *a, const char *name) {
    AgentCapacity *c = a->capacity;
    VolumeState *s = agent_volume_state(a, name);
    if (s)
        return s;
    VolumeState *t = realloc(c->states, sizeof(*t) * (c->n_states + 1));
    if (!t)
        return NULL;
    c->states = t;
    s = &t[c->n_states];
    *s = (VolumeState) { .name = strdup(name) };
    if (!s->name)
        return NULL;
    c->n_states++;
    return s;
}

static void state_done(VolumeState *s) {
    free(s->name);
    volume_assessment_done(&s->assessment);
    growth_decision_done(&s->growth);
    free(s->growth_error);
}

/* Volumes no longer observed (torn down, or dropped from the layout) are
 * forgotten, unless a grow of theirs is still running. */
static void states_prune(Agent *a) {
    AgentCapacity *c = a->capacity;
    size_t o = 0;
    for (size_t i = 0; i < c->n_states; i++) {
        VolumeState *s = &c->states[i];
        if (!s->growing && !agent_volume(a, s->name)) {
            state_done(s);
            continue;
        }
        c->states[o++] = *s;
    }
    c->n_states = o;
}

/* ---- growth -------------------------------------------------------------- */

typedef struct GrowJob {
    Agent *agent;
    char *volume;
    uint64_t from, to;
} GrowJob;

static void on_grown(Agent *a, int error, const char *message, ApplyResult *res, json_object *extra,
                     void *userdata) {
    GrowJob *g = userdata;
    VolumeState *s = agent_volume_state(a, g->volume);
    const ApplyVolumeResult *v = apply_result_find(res, g->volume);
    if (error >= 0 && v && (v->outcome == APPLY_OUTCOME_FAILED || v->outcome == APPLY_OUTCOME_REFUSED)) {
        error = v->error < 0 ? v->error : -EIO;
        message = v->message;
    }
    char a1[16], a2[16];
    if (s) {
        s->growing = false;
        free(s->growth_error);
        s->growth_error = NULL;
        if (error < 0) {
            s->failures++;
            s->grow_failures++;
            usec_t delay = RETRY_FIRST << MIN(s->failures - 1, 5u);
            s->retry_at = now_usec(CLOCK_MONOTONIC) + MIN(delay, RETRY_MAX);
            s->growth_error = strdup(message ?: strerror(-error));
        } else {
            s->failures = 0;
            s->retry_at = 0;
            s->grows++;
            s->grown_bytes += g->to - g->from;
        }
    }
    json_object *f = json_object_new_object();
    json_object_object_add(f, "volume", json_object_new_string(g->volume));
    json_object_object_add(f, "from_bytes", json_object_new_uint64(g->from));
    json_object_object_add(f, "to_bytes", json_object_new_uint64(g->to));
    if (error < 0) {
        log_volume(LOG_WARNING, g->volume, NULL, "volume %s: growing from %s to %s failed (retrying in %s): %s", g->volume,
                    format_bytes(a1, sizeof a1, g->from), format_bytes(a2, sizeof a2, g->to),
                    s && s->failures > 0 ? (s->failures == 1 ? "30s" : "a while") : "?",
                    message ?: strerror(-error));
        json_object_object_add(f, "error", json_object_new_string(message ?: strerror(-error)));
        agent_event(a, "volume.growth_failed", f);
    } else {
        log_volume(LOG_NOTICE, g->volume, LAYOUTD_MESSAGE_VOLUME_GROWN, "volume %s: grew from %s to %s online",
                   g->volume, format_bytes(a1, sizeof a1, g->from), format_bytes(a2, sizeof a2, g->to));
        agent_event(a, "volume.grown", f);
    }
    free(g->volume);
    free(g);
    /* The job brought its observation of the volume; agent_volumes_changed
     * runs after this callback and judges it again. */
}

static int grow_start(Agent *a, VolumeState *s, const GrowthDecision *d) {
    GrowJob *g = calloc(1, sizeof(*g));
    if (!g || !(g->volume = strdup(s->name))) {
        free(g);
        return -ENOMEM;
    }
    g->agent = a;
    g->from = d->from;
    g->to = d->to;
    json_object *args = json_object_new_object();
    json_object_object_add(args, "volume", json_object_new_string(s->name));
    json_object_object_add(args, "size", json_object_new_uint64(d->to));
    char a1[16], a2[16];
    log_info("volume %s: %s: growing from %s to %s", s->name, d->message, format_bytes(a1, sizeof a1, d->from),
             format_bytes(a2, sizeof a2, d->to));
    s->growing = true;
    int r = agent_job_submit_full(a, WORKER_OP_GROW, args, s->name, NULL, AGENT_JOB_OWN_RESULT, on_grown, g);
    if (r < 0) {
        s->growing = false;
        free(g->volume);
        free(g);
    }
    return r;
}

static void decide(Agent *a, VolumeState *s, const VolumeObservation *v) {
    AgentCapacity *c = a->capacity;
    const Pool *p = v->declared ? layout_pool(agent_layout(a), v->role) : NULL;
    GrowthDecision d;
    if (capacity_growth_decide(p, v, a->engine->observation, &c->growth_env, &d) < 0) {
        log_oom();
        return;
    }
    /* A refusal is logged when it starts or changes, not on every look. */
    if (d.action == GROWTH_REFUSE && !streq_ptr(s->refusal_logged, d.reason)) {
        log_volume(LOG_WARNING, s->name, LAYOUTD_MESSAGE_GROWTH_REFUSED, "volume %s: growth refused (%s): %s",
                   s->name, d.reason, d.message);
        json_object *f = json_object_new_object();
        json_object_object_add(f, "volume", json_object_new_string(s->name));
        json_object_object_add(f, "reason", json_object_new_string(d.reason));
        json_object_object_add(f, "message", json_object_new_string(d.message));
        agent_event(a, "volume.growth_refused", f);
        s->refusal_logged = d.reason;
    } else if (d.action != GROWTH_REFUSE && s->refusal_logged) {
        log_notice("volume %s: growth is no longer refused", s->name);
        s->refusal_logged = NULL;
    }
    if (d.action == GROWTH_GROW && !s->growing && !a->stopping && now_usec(CLOCK_MONOTONIC) >= s->retry_at)
        (void) grow_start(a, s, &d);
    growth_decision_done(&s->growth);
    s->growth = d;
}

static void assess(Agent *a, VolumeState *s, const VolumeObservation *v) {
    const Pool *p = v->declared ? layout_pool(agent_layout(a), v->role) : NULL;
    const ApplyVolumeResult *res = apply_result_find(a->volume_results, v->name);
    const FlushProbe *probe = agent_flush_probe_find(a, v->name);
    HealthInputs in = {
        .out_of_service = res && res->message ? res->message : NULL,
        .probe_error = probe ? probe->last_error : 0,
        .growing = s->growing,
        .growth = &s->growth,
        .growth_error = s->growth_error,
    };
    if (v->role == POOL_CONTENT)
        in.objects_missing = agent_content_missing(a, v->name, &in.missing_workspaces, &in.missing_example);
    VolumeAssessment n;
    if (capacity_assess(p, v, &in, &n) < 0) {
        log_oom();
        return;
    }
    volume_assessment_done(&s->assessment);
    s->assessment = n;
}

/* ---- the fast watch ------------------------------------------------------- */

/* Whether the fast watch must look at v: always for a volume that may
 * grow (an install fills 500 MB in seconds: the 10 s observation would see
 * it only when it is full), and for any other within NEAR_POINTS of a
 * threshold. */
static bool is_near(Agent *a, const VolumeObservation *v, const VolumeState *s) {
    const Pool *p = v->declared ? layout_pool(agent_layout(a), v->role) : NULL;
    CapacityUsage u;
    capacity_usage(v, &u);
    if (!p || !u.known)
        return false;
    if ((s && s->growing) || (p->growth.enabled && volume_observation_is_up(v)))
        return true;
    unsigned at = p->capacity.warn;
    if (p->growth.enabled)
        at = MIN(at, p->growth.threshold);
    return u.percent + NEAR_POINTS >= at;
}

static void on_watch_sample(Worker *w, json_object *sample, void *userdata) {
    Agent *a = userdata;
    agent_volumes_merge_statfs(a, json_object_object_get(sample, "statfs"));
    agent_volumes_changed(a);
}

static void on_watch_done(Worker *w, int error, const char *message, ApplyResult *res, Observation *obs,
                          json_object *extra, void *userdata) {
    Agent *a = userdata;
    AgentCapacity *c = a->capacity;
    if (error < 0)
        log_warning("capacity watch ended: %s", message ?: strerror(-error));
    apply_result_free(res);
    observation_free(obs);
    json_object_put(extra);
    /* Not freed here (we are inside its callback): the timer does it. */
    c->watch_ended = true;
    (void) sd_event_source_set_time_relative(c->timer, WATCH_RESTART_DELAY);
    (void) sd_event_source_set_enabled(c->timer, SD_EVENT_ONESHOT);
}

/* The mount paths the watch covers: every volume in service. */
static char **watch_paths(Agent *a) {
    const Observation *o = a->engine->observation;
    char **l = NULL;
    for (size_t i = 0; o && i < o->n; i++)
        if (volume_observation_is_up(&o->volumes[i]) && o->volumes[i].mount_path &&
            strv_extend(&l, o->volumes[i].mount_path) < 0) {
            strv_free(l);
            return NULL;
        }
    return l;
}

static void watch_stop(Agent *a) {
    AgentCapacity *c = a->capacity;
    if (c->watcher)
        log_debug("capacity watch: stopped (no volume near a threshold)");
    c->watcher = worker_free(c->watcher);
    c->watch_paths = strv_free(c->watch_paths);
    c->watch_ended = false;
}

static int watch_start(Agent *a, char **paths) {
    AgentCapacity *c = a->capacity;
    json_object *args = json_object_new_object(), *arr = json_object_new_array();
    json_object_object_add(args, "paths", arr);
    json_object_object_add(args, "interval_ms", json_object_new_int((int) (WATCH_INTERVAL / USEC_PER_MSEC)));
    for (char **p = paths; p && *p; p++)
        json_object_array_add(arr, json_object_new_string(*p));
    WorkerRequest req = { .op = WORKER_OP_WATCH, .layout = agent_layout(a), .record = agent_record(a), .args = args };
    WorkerCallbacks cb = { .on_sample = on_watch_sample, .on_done = on_watch_done };
    int r = worker_start(a->event, AGENT_SELF_EXE, &req, &cb, a, &c->watcher);
    json_object_put(args);
    if (r < 0)
        return r;
    c->watch_paths = paths;
    log_debug("capacity watch: started (pid %d, every %llu ms)", (int) worker_pid(c->watcher),
              (unsigned long long) (WATCH_INTERVAL / USEC_PER_MSEC));
    return 0;
}

/* Starts, restarts (the volumes in service changed) or stops the watch;
 * on the timer, never from inside the watch's own callbacks. */
static int on_watch_timer(sd_event_source *s, uint64_t usec, void *userdata) {
    Agent *a = userdata;
    AgentCapacity *c = a->capacity;
    usec_t now = now_usec(CLOCK_MONOTONIC);
    if (c->watch_ended)
        watch_stop(a);
    if (!c->watch_near && (a->stopping || now - c->watch_quiet_since >= WATCH_LINGER)) {
        watch_stop(a);
        return 0;
    }
    if (!c->watch_near) {
        /* Quiet for now: stop once it stayed quiet a while. */
        (void) sd_event_source_set_time(s, c->watch_quiet_since + WATCH_LINGER);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
    }
    char **paths = watch_paths(a);
    if (c->watcher && strv_equal((const char *const *) paths, (const char *const *) c->watch_paths)) {
        strv_free(paths);
        return 0;
    }
    watch_stop(a);
    int r = watch_start(a, paths);
    if (r < 0) {
        strv_free(paths);
        log_warning_errno(r, "capacity watch: cannot start the watch worker: %m");
    }
    return 0;
}

static void watch_schedule(Agent *a, bool near) {
    AgentCapacity *c = a->capacity;
    if (!c->timer)
        return;
    if (near == c->watch_near && (!near || c->watcher))
        return; /* nothing to change (the paths are checked on the timer) */
    if (!near && c->watch_near)
        c->watch_quiet_since = now_usec(CLOCK_MONOTONIC);
    c->watch_near = near;
    (void) sd_event_source_set_time_relative(c->timer, 0);
    (void) sd_event_source_set_enabled(c->timer, SD_EVENT_ONESHOT);
}

/* ---- the pass over every volume ----------------------------------------- */

static int health_priority(VolumeHealth h) {
    switch (h) {
    case VOLUME_HEALTH_OK:
        return LOG_NOTICE;
    case VOLUME_HEALTH_FAILED:
        return LOG_ERR;
    default:
        return LOG_WARNING;
    }
}

/* A change of a volume's health is logged and sent as an event. */
static void report_health(Agent *a) {
    AgentCapacity *c = a->capacity;
    for (size_t i = 0; i < c->n_states; i++) {
        VolumeState *s = &c->states[i];
        VolumeHealth h = s->assessment.health;
        const char *problem = s->assessment.n > 0 ? s->assessment.findings[0].message : NULL;
        /* Until the start's apply has ended, a volume that is not up is
         * one not brought up yet: unknown, not failed. Said as an error,
         * it was noise at every start (the job's end reports a real
         * failure at once: agent_volumes_changed follows it). */
        if (!a->volumes_started && !s->reported && h == VOLUME_HEALTH_FAILED)
            continue;
        if ((s->reported && s->reported_health == h) || (!s->reported && h == VOLUME_HEALTH_OK)) {
            s->reported = true;
            s->reported_health = h;
            continue;
        }
        const char *before = s->reported ? volume_health_to_string(s->reported_health) : NULL;
        log_volume(health_priority(h), s->name, h >= VOLUME_HEALTH_DEGRADED ? LAYOUTD_MESSAGE_VOLUME_DEGRADED : NULL,
                   "volume %s: health %s -> %s%s%s", s->name, before ?: "unknown", volume_health_to_string(h),
                   problem ? ": " : "", problem ?: "");
        json_object *f = json_object_new_object();
        json_object_object_add(f, "volume", json_object_new_string(s->name));
        json_object_object_add(f, "from", before ? json_object_new_string(before) : NULL);
        json_object_object_add(f, "to", json_object_new_string(volume_health_to_string(h)));
        json_object_object_add(f, "problem", problem ? json_object_new_string(problem) : NULL);
        json_object_object_add(f, "code", s->assessment.n > 0 ? json_object_new_string(s->assessment.findings[0].code)
                                                              : NULL);
        agent_event(a, "volume.health", f);
        s->reported = true;
        s->reported_health = h;
    }
}

static void capacity_observed(Agent *a) {
    const Observation *o = a->engine->observation;
    bool near = false;
    if (!a->capacity)
        return;
    for (size_t i = 0; o && i < o->n; i++) {
        const VolumeObservation *v = &o->volumes[i];
        VolumeState *s = state_get(a, v->name);
        if (!s) {
            log_oom();
            continue;
        }
        decide(a, s, v);
        assess(a, s, v);
        near = near || is_near(a, v, s);
    }
    states_prune(a);
    watch_schedule(a, near && !a->stopping);
    report_health(a);
}

/* The capabilities missing from the effective set: an online grow whose
 * filesystem needs one of them is refused (ext4's EXT4_IOC_RESIZE_FS wants
 * CAP_SYS_RESOURCE, and resize2fs fails with EPERM without it). */
static uint64_t missing_capabilities(void) {
    struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
    struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = {};
    if (syscall(SYS_capget, &h, d) < 0)
        return 0; /* cannot tell: let the grow tool say */
    uint64_t have = (uint64_t) d[1].effective << 32 | d[0].effective;
    return ~have;
}

static int capacity_start(Agent *a) {
    if (!a->capacity && !(a->capacity = calloc(1, sizeof(AgentCapacity))))
        return log_oom();
    AgentCapacity *c = a->capacity;
    c->growth_env.missing_capabilities = missing_capabilities();
    for (size_t i = 0; i < _FS_TYPE_MAX; i++)
        if (!fs_type_can_grow(&fs_types[i], c->growth_env.missing_capabilities))
            log_info("No %s: %s volumes cannot grow online here (growth of their pools is refused)",
                     fs_types[i].grow.capability_name ?: "capability", fs_types[i].display_name);
    int r = sd_event_add_time_relative(a->event, &c->timer, CLOCK_MONOTONIC, 0, 10 * USEC_PER_MSEC,
                                       on_watch_timer, a);
    if (r >= 0)
        r = sd_event_source_set_enabled(c->timer, SD_EVENT_OFF);
    if (r < 0)
        log_warning_errno(r, "Cannot set up the capacity watch, growth follows the 10 s observation only: %m");
    return r;
}

static void capacity_free(Agent *a) {
    AgentCapacity *c = a->capacity;
    if (!c)
        return;
    c->timer = sd_event_source_disable_unref(c->timer);
    watch_stop(a);
    for (size_t i = 0; i < c->n_states; i++)
        state_done(&c->states[i]);
    free(c->states);
    a->capacity = mfree(c);
}

/* ---- what placement and /v1/capacity count on ----------------------------- */

uint64_t agent_capacity_growable(Agent *a, const VolumeObservation *v) {
    AgentCapacity *c = a->capacity;
    const Pool *p = v->declared ? layout_pool(agent_layout(a), v->role) : NULL;
    const VolumeState *s = agent_volume_state(a, v->name);
    if (s && (s->growth.action == GROWTH_REFUSE || s->growth_error))
        return 0;
    return capacity_growable(p, v, a->engine->observation, c ? &c->growth_env : &(GrowthEnv) {});
}

/* State volumes the engine refused and never recorded (a foreign file at
 * state-N.img): their index is taken for good. */
static unsigned refused_state_volumes(Agent *a) {
    unsigned n = 0;
    for (size_t i = 0; a->volume_results && i < a->volume_results->n_volumes; i++) {
        const ApplyVolumeResult *v = &a->volume_results->volumes[i];
        unsigned index;
        if (v->outcome == APPLY_OUTCOME_REFUSED && !state_record_find_volume(agent_record(a), v->volume) &&
            !agent_volume(a, v->volume) && sscanf(v->volume, "state-%u", &index) == 1)
            n++;
    }
    return n;
}

/* What capacity_pool_report needs of one declared volume: what only the
 * agent knows (its health, what growth may still add, its workspaces and
 * their quotas from the record). */
static CapacityReportVolume report_volume(Agent *a, const VolumeObservation *v) {
    StateRecord *record = agent_record(a);
    CapacityReportVolume rv = {
        .observation = v,
        .health = volume_health_from_string(agent_volume_health(a, v, NULL)),
        .growable = agent_capacity_growable(a, v),
        .quota_enforced = volume_observation_enforces_quota(v),
    };
    if (v->role != POOL_STATE)
        return rv;
    rv.workspaces = state_record_count_workspaces(record, v->name);
    for (size_t k = 0; k < record->n_workspaces; k++)
        if (record->workspaces[k]->active && streq_ptr(record->workspaces[k]->volume, v->name))
            rv.quota_bytes += record->workspaces[k]->quota;
    return rv;
}

static json_object *pool_json(const Pool *p, const CapacityPoolReport *r) {
    json_object *o = json_object_new_object();
    json_object_object_add(o, "role", json_object_new_string(pool_role_to_string(p->role)));
    json_object_object_add(o, "backend", json_object_new_string(backend_to_string(p->backend)));
    json_object_object_add(o, "volumes", json_object_new_int64(r->volumes));
    json_object_object_add(o, "size_bytes", json_object_new_uint64(r->size_bytes));
    json_object_object_add(o, "used_bytes", json_object_new_uint64(r->used_bytes));
    json_object_object_add(o, "free_bytes", json_object_new_uint64(r->free_bytes));
    json_object_object_add(o, "growable_bytes", json_object_new_uint64(r->growable_bytes));
    if (p->role != POOL_STATE)
        return o;
    json_object_object_add(o, "max_volumes", json_object_new_int64(p->max_volumes));
    json_object_object_add(o, "volumes_accepting", json_object_new_int64(r->volumes_accepting));
    json_object_object_add(o, "refused_volumes", json_object_new_int64(r->refused_volumes));
    json_object_object_add(o, "carvable_volumes", json_object_new_int64(r->carvable_volumes));
    json_object_object_add(o, "carvable_limit", r->carvable_limit ? json_object_new_string(r->carvable_limit) : NULL);
    json_object_object_add(o, "carvable_bytes", json_object_new_uint64(r->carvable_bytes));
    json_object_object_add(o, "workspaces_per_volume", json_object_new_int64(p->workspaces_per_volume));
    json_object_object_add(o, "workspaces", json_object_new_uint64(r->workspaces));
    json_object_object_add(o, "workspace_slots", json_object_new_uint64(r->workspace_slots));
    json_object_object_add(o, "workspace_slots_free", json_object_new_uint64(r->workspace_slots_free));
    json_object_object_add(o, "quota_overcommit_percent", json_object_new_int64(p->quota_overcommit));
    json_object_object_add(o, "quota_bytes", json_object_new_uint64(r->quota_bytes));
    json_object_object_add(o, "quota_bytes_free", json_object_new_uint64(r->quota_bytes_free));
    return o;
}

json_object *agent_capacity_json(Agent *a) {
    const Observation *obs = a->engine->observation;
    const Layout *layout = agent_layout(a);
    _cleanup_free_ CapacityReportVolume *in = calloc(MAX(obs ? obs->n : 0, 1u), sizeof(CapacityReportVolume));
    if (!in)
        return NULL;
    json_object *pools = json_object_new_array();
    uint64_t host_free_slots = 0;
    for (PoolRole role = 0; role < _POOL_ROLE_MAX; role++) {
        const Pool *p = layout_pool(layout, role);
        if (!p)
            continue;
        size_t n = 0;
        for (size_t i = 0; obs && i < obs->n; i++)
            if (obs->volumes[i].role == role && obs->volumes[i].declared)
                in[n++] = report_volume(a, &obs->volumes[i]);
        CapacityPoolReport r;
        capacity_pool_report(p, obs, in, n, role == POOL_STATE ? refused_state_volumes(a) : 0, &r);
        host_free_slots += r.workspace_slots_free;
        json_object_array_add(pools, pool_json(p, &r));
    }
    json_object *o = json_object_new_object();
    json_object_object_add(o, "pools", pools);
    json_object_object_add(o, "workspace_slots_free", json_object_new_uint64(host_free_slots));
    json_object *h = json_object_new_object();
    if (obs && obs->has_backing_free) {
        const Pool *sp = layout_pool(layout, POOL_STATE);
        json_object_object_add(h, "free_bytes", json_object_new_uint64(obs->backing_free));
        json_object_object_add(h, "size_bytes", json_object_new_uint64(obs->backing_size));
        json_object_object_add(h, "promised_bytes", json_object_new_uint64(capacity_host_promised(obs)));
        json_object_object_add(h, "headroom_bytes", json_object_new_uint64(capacity_host_headroom(obs)));
        json_object_object_add(h, "carvable_bytes", json_object_new_uint64(capacity_host_carvable(sp, obs)));
    }
    json_object_object_add(o, "host", h);
    return o;
}

static void capacity_metrics(Agent *a, MetricsWriter *w) {
    AgentCapacity *c = a->capacity;
    const Observation *o = a->engine->observation;
    size_t n = c ? c->n_states : 0;
    (void) metrics_writer_family(w, "layoutd_volume_problem", METRIC_GAUGE,
                                 "1 for each finding on the volume (code), at its level");
    for (size_t i = 0; i < n; i++) {
        const VolumeState *st = &c->states[i];
        for (size_t k = 0; k < st->assessment.n; k++)
            (void) metrics_writer_sample(w, (const char *const[]) { "volume", st->name, "code",
                                                                    st->assessment.findings[k].code, "level",
                                                                    volume_health_to_string(
                                                                            st->assessment.findings[k].level),
                                                                    NULL },
                                         1);
    }
    (void) metrics_writer_family(w, "layoutd_volume_used_ratio", METRIC_GAUGE,
                                 "Used share of the volume's bytes (as df counts) or inodes");
    for (size_t i = 0; o && i < o->n; i++) {
        CapacityUsage u;
        capacity_usage(&o->volumes[i], &u);
        if (!u.known)
            continue;
        const VolumeObservation *v = &o->volumes[i];
        uint64_t usable = v->fs_used + v->fs_avail;
        (void) metrics_writer_sample(w, (const char *const[]) { "volume", v->name, "resource", "bytes", NULL },
                                     usable ? (double) v->fs_used / (double) usable : 0);
        if (v->fs_inodes)
            (void) metrics_writer_sample(w, (const char *const[]) { "volume", v->name, "resource", "inodes", NULL },
                                         (double) (v->fs_inodes - v->fs_inodes_free) / (double) v->fs_inodes);
    }
    (void) metrics_writer_family(w, "layoutd_volume_grows_total", METRIC_COUNTER,
                                 "Online grows of the volume since the agent started");
    for (size_t i = 0; i < n; i++)
        (void) metrics_writer_sample(w, (const char *const[]) { "volume", c->states[i].name, NULL },
                                     (double) c->states[i].grows);
    (void) metrics_writer_family(w, "layoutd_volume_grow_failures_total", METRIC_COUNTER,
                                 "Grows of the volume that failed since the agent started");
    for (size_t i = 0; i < n; i++)
        (void) metrics_writer_sample(w, (const char *const[]) { "volume", c->states[i].name, NULL },
                                     (double) c->states[i].grow_failures);
    (void) metrics_writer_family(w, "layoutd_volume_growth_refused", METRIC_GAUGE,
                                 "1 while the volume is past growth.threshold and cannot grow (reason)");
    for (size_t i = 0; i < n; i++) {
        const VolumeState *s = &c->states[i];
        if (s->growth.action == GROWTH_REFUSE)
            (void) metrics_writer_sample(w, (const char *const[]) { "volume", s->name, "reason", s->growth.reason,
                                                                    NULL },
                                         1);
    }
    (void) metrics_writer_family(w, "layoutd_host_headroom_bytes", METRIC_GAUGE,
                                 "Free bytes of the host filesystem under the backing files, beyond what the "
                                 "sparse backing files may still claim");
    if (o && o->has_backing_free)
        (void) metrics_writer_sample(w, NULL, (double) capacity_host_headroom(o));
}

/* ---- what the API shows ----------------------------------------------------- */

static void capacity_volume_json(Agent *a, const VolumeObservation *v, json_object *o) {
    const Pool *pool = v->declared ? layout_pool(agent_layout(a), v->role) : NULL;
    const VolumeState *vs = agent_volume_state(a, v->name);
    json_object *gj = NULL;
    if (pool && pool->growth.enabled) {
        gj = json_object_new_object();
        const char *st = !vs ? "idle"
                         : vs->growing ? "growing"
                         : vs->growth.action == GROWTH_REFUSE ? "refused"
                         : vs->growth_error ? "failed"
                                            : "idle";
        json_object_object_add(gj, "state", json_object_new_string(st));
        json_object_object_add(gj, "threshold_percent", json_object_new_int((int) pool->growth.threshold));
        json_object_object_add(gj, "max_size_bytes", json_object_new_uint64(pool->growth.max_size));
        json_object_object_add(gj, "refused_reason", vs && vs->growth.action == GROWTH_REFUSE
                                                         ? json_object_new_string(vs->growth.reason)
                                                         : NULL);
        json_object_object_add(gj, "last_error", vs && vs->growth_error ? json_object_new_string(vs->growth_error)
                                                                         : NULL);
        json_object_object_add(gj, "grows", json_object_new_uint64(vs ? vs->grows : 0));
        json_object_object_add(gj, "grown_bytes", json_object_new_uint64(vs ? vs->grown_bytes : 0));
    }
    json_object_object_add(o, "growth", gj);
}

static int capacity_problems_inputs(Agent *a, ProblemInputs *in) {
    AgentCapacity *c = a->capacity;
    if (!c)
        return 0;
    ProblemVolume *t = calloc(MAX(c->n_states, 1u), sizeof(ProblemVolume));
    if (!t)
        return -ENOMEM;
    for (size_t i = 0; i < c->n_states; i++)
        t[i] = (ProblemVolume) { .name = c->states[i].name, .assessment = &c->states[i].assessment };
    in->volumes = t;
    in->n_volumes = c->n_states;
    return 0;
}

const AgentModule agent_capacity_module = {
    .name = "capacity",
    .start = capacity_start,
    .free = capacity_free,
    .observed = capacity_observed,
    .volume_json = capacity_volume_json,
    .metrics = capacity_metrics,
    .problems = capacity_problems_inputs,
    .assessment = capacity_assessment,
};
