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

VolumeState *agent_volume_state(Agent *a, const char *name) {
    for (size_t i = 0; i < a->n_volume_states; i++)
        if (streq(a->volume_states[i].name, name))
            return &a->volume_states[i];
    return NULL;
}

static VolumeState *state_get(Agent *a, const char *name) {
    VolumeState *s = agent_volume_state(a, name);
    if (s)
        return s;
    VolumeState *t = realloc(a->volume_states, sizeof(*t) * (a->n_volume_states + 1));
    if (!t)
        return NULL;
    a->volume_states = t;
    s = &t[a->n_volume_states];
    *s = (VolumeState) { .name = strdup(name) };
    if (!s->name)
        return NULL;
    a->n_volume_states++;
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
    size_t o = 0;
    for (size_t i = 0; i < a->n_volume_states; i++) {
        VolumeState *s = &a->volume_states[i];
        if (!s->growing && !agent_volume(a, s->name)) {
            state_done(s);
            continue;
        }
        a->volume_states[o++] = *s;
    }
    a->n_volume_states = o;
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
    const Pool *p = v->declared ? layout_pool(agent_layout(a), v->role) : NULL;
    GrowthDecision d;
    if (capacity_growth_decide(p, v, a->engine->observation, &a->growth_env, &d) < 0) {
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

void agent_capacity_merge_statfs(Agent *a, json_object *list) {
    Observation *o = a->engine->observation;
    if (!o || !list || !json_object_is_type(list, json_type_array))
        return;
    /* Matched by mount path: the observation may have been replaced
     * since the worker started. */
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        json_object *e = json_object_array_get_idx(list, i), *x;
        const char *path = json_object_object_get_ex(e, "path", &x) ? json_object_get_string(x) : NULL;
        if (!json_object_object_get_ex(e, "statfs_error", &x))
            continue;
        int err = json_object_get_int(x);
        for (size_t k = 0; path && k < o->n; k++) {
            VolumeObservation *v = &o->volumes[k];
            if (!streq_ptr(v->mount_path, path) || !volume_observation_is_up(v))
                continue;
            v->statvfs_error = err;
            if (err)
                break;
            v->has_statvfs = true;
#define GET(field) v->field = json_object_object_get_ex(e, #field, &x) ? json_object_get_uint64(x) : v->field
            GET(fs_size);
            GET(fs_used);
            GET(fs_avail);
            GET(fs_inodes);
            GET(fs_inodes_free);
#undef GET
            v->fs_read_only = json_object_object_get_ex(e, "fs_read_only", &x) && json_object_get_boolean(x);
            break;
        }
    }
}

static void on_watch_sample(Worker *w, json_object *sample, void *userdata) {
    Agent *a = userdata;
    agent_capacity_merge_statfs(a, json_object_object_get(sample, "statfs"));
    agent_volumes_changed(a);
}

static void on_watch_done(Worker *w, int error, const char *message, ApplyResult *res, Observation *obs,
                          json_object *extra, void *userdata) {
    Agent *a = userdata;
    if (error < 0)
        log_warning("capacity watch ended: %s", message ?: strerror(-error));
    apply_result_free(res);
    observation_free(obs);
    json_object_put(extra);
    /* Not freed here (we are inside its callback): the timer does it. */
    a->watch_ended = true;
    (void) sd_event_source_set_time_relative(a->capacity_timer, WATCH_RESTART_DELAY);
    (void) sd_event_source_set_enabled(a->capacity_timer, SD_EVENT_ONESHOT);
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
    if (a->capacity_watcher)
        log_debug("capacity watch: stopped (no volume near a threshold)");
    a->capacity_watcher = worker_free(a->capacity_watcher);
    a->watch_paths = strv_free(a->watch_paths);
    a->watch_ended = false;
}

static int watch_start(Agent *a, char **paths) {
    json_object *args = json_object_new_object(), *arr = json_object_new_array();
    json_object_object_add(args, "paths", arr);
    json_object_object_add(args, "interval_ms", json_object_new_int((int) (WATCH_INTERVAL / USEC_PER_MSEC)));
    for (char **p = paths; p && *p; p++)
        json_object_array_add(arr, json_object_new_string(*p));
    WorkerRequest req = { .op = WORKER_OP_WATCH, .layout = agent_layout(a), .record = agent_record(a), .args = args };
    WorkerCallbacks cb = { .on_sample = on_watch_sample, .on_done = on_watch_done };
    int r = worker_start(a->event, AGENT_SELF_EXE, &req, &cb, a, &a->capacity_watcher);
    json_object_put(args);
    if (r < 0)
        return r;
    a->watch_paths = paths;
    log_debug("capacity watch: started (pid %d, every %llu ms)", (int) worker_pid(a->capacity_watcher),
              (unsigned long long) (WATCH_INTERVAL / USEC_PER_MSEC));
    return 0;
}

/* Starts, restarts (the volumes in service changed) or stops the watch;
 * on the timer, never from inside the watch's own callbacks. */
static int on_watch_timer(sd_event_source *s, uint64_t usec, void *userdata) {
    Agent *a = userdata;
    usec_t now = now_usec(CLOCK_MONOTONIC);
    if (a->watch_ended)
        watch_stop(a);
    if (!a->watch_near && (a->stopping || now - a->watch_quiet_since >= WATCH_LINGER)) {
        watch_stop(a);
        return 0;
    }
    if (!a->watch_near) {
        /* Quiet for now: stop once it stayed quiet a while. */
        (void) sd_event_source_set_time(s, a->watch_quiet_since + WATCH_LINGER);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
    }
    char **paths = watch_paths(a);
    if (a->capacity_watcher && strv_equal((const char *const *) paths, (const char *const *) a->watch_paths)) {
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
    if (!a->capacity_timer)
        return;
    if (near == a->watch_near && (!near || a->capacity_watcher))
        return; /* nothing to change (the paths are checked on the timer) */
    if (!near && a->watch_near)
        a->watch_quiet_since = now_usec(CLOCK_MONOTONIC);
    a->watch_near = near;
    (void) sd_event_source_set_time_relative(a->capacity_timer, 0);
    (void) sd_event_source_set_enabled(a->capacity_timer, SD_EVENT_ONESHOT);
}

/* ---- the pass over every volume ----------------------------------------- */

void agent_capacity_observed(Agent *a) {
    const Observation *o = a->engine->observation;
    bool near = false;
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

int agent_capacity_start(Agent *a) {
    a->growth_env.missing_capabilities = missing_capabilities();
    for (size_t i = 0; i < _FS_TYPE_MAX; i++)
        if (!fs_type_can_grow(&fs_types[i], a->growth_env.missing_capabilities))
            log_info("No %s: %s volumes cannot grow online here (growth of their pools is refused)",
                     fs_types[i].grow.capability_name ?: "capability", fs_types[i].display_name);
    int r = sd_event_add_time_relative(a->event, &a->capacity_timer, CLOCK_MONOTONIC, 0, 10 * USEC_PER_MSEC,
                                       on_watch_timer, a);
    if (r < 0)
        return r;
    return sd_event_source_set_enabled(a->capacity_timer, SD_EVENT_OFF);
}

void agent_capacity_stop(Agent *a) {
    a->capacity_timer = sd_event_source_disable_unref(a->capacity_timer);
    watch_stop(a);
    for (size_t i = 0; i < a->n_volume_states; i++)
        state_done(&a->volume_states[i]);
    a->volume_states = mfree(a->volume_states);
    a->n_volume_states = 0;
}

/* ---- what placement and /v1/capacity count on ----------------------------- */

uint64_t agent_capacity_growable(Agent *a, const VolumeObservation *v) {
    const Pool *p = v->declared ? layout_pool(agent_layout(a), v->role) : NULL;
    const VolumeState *s = agent_volume_state(a, v->name);
    if (s && (s->growth.action == GROWTH_REFUSE || s->growth_error))
        return 0;
    return capacity_growable(p, v, a->engine->observation, &a->growth_env);
}

void agent_capacity_metrics(Agent *a, MetricsWriter *w) {
    const Observation *o = a->engine->observation;
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
    for (size_t i = 0; i < a->n_volume_states; i++)
        (void) metrics_writer_sample(w, (const char *const[]) { "volume", a->volume_states[i].name, NULL },
                                     (double) a->volume_states[i].grows);
    (void) metrics_writer_family(w, "layoutd_volume_grow_failures_total", METRIC_COUNTER,
                                 "Grows of the volume that failed since the agent started");
    for (size_t i = 0; i < a->n_volume_states; i++)
        (void) metrics_writer_sample(w, (const char *const[]) { "volume", a->volume_states[i].name, NULL },
                                     (double) a->volume_states[i].grow_failures);
    (void) metrics_writer_family(w, "layoutd_volume_growth_refused", METRIC_GAUGE,
                                 "1 while the volume is past growth.threshold and cannot grow (reason)");
    for (size_t i = 0; i < a->n_volume_states; i++) {
        const VolumeState *s = &a->volume_states[i];
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
