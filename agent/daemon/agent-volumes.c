/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The agent's view of its volumes: the cached observation that every GET
 * is served from. It is refreshed by an observe worker (never on the
 * loop), coalesced to one at a time: when the mount table changes
 * (libmount's monitor, mount-monitor.h) or udev reports a block device event (added,
 * changed, removed: a loop or dm device going away under us), both
 * debounced; after volume jobs (which bring their own observation); and
 * on a timer. Health is assessed from it, and a
 * change of a volume's health is logged and sent as an event. The content
 * pool's arguments (its dirs, the roots that hold references to it) are
 * read from it and the record for the sweep and the check.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>

#include "agent.h"
#include "block-monitor.h"
#include "log.h"
#include "mount-monitor.h"
#include "util.h"
#include "volume-report.h"

#define OBSERVE_INTERVAL (10 * USEC_PER_SEC)
#define MOUNTINFO_DEBOUNCE (250 * USEC_PER_MSEC)

const VolumeObservation *agent_volume(Agent *a, const char *name) {
    return observation_find(a->engine->observation, name);
}

size_t agent_volumes_total(Agent *a) {
    const Observation *o = a->engine->observation;
    size_t n = 0;
    for (size_t i = 0; o && i < o->n; i++)
        if (o->volumes[i].declared || state_record_find_volume(agent_record(a), o->volumes[i].name))
            n++;
    return n;
}

size_t agent_volumes_up(Agent *a) {
    const Observation *o = a->engine->observation;
    size_t n = 0;
    for (size_t i = 0; o && i < o->n; i++)
        if (volume_observation_is_up(&o->volumes[i]))
            n++;
    return n;
}

/* The latest assessment (agent-capacity.c): ok, warning (filling),
 * degraded (in service, not as asked, or writes fail), failed (out of
 * service); the problem is the worst finding. */
const char *agent_volume_health(Agent *a, const VolumeObservation *v, const char **ret_problem) {
    const VolumeAssessment *s = agent_modules_assessment(a, v->name);
    VolumeHealth h = s ? s->health : volume_observation_is_up(v) ? VOLUME_HEALTH_OK : VOLUME_HEALTH_FAILED;
    if (ret_problem)
        *ret_problem = s && s->n > 0 ? s->findings[0].message : h == VOLUME_HEALTH_FAILED ? "not mounted" : NULL;
    return volume_health_to_string(h);
}

/* Observations taken before a volume went bring it back: dropped again,
 * unless the record holds it again (carved anew). */
static void forget_gone(Agent *a) {
    for (size_t i = 0; a->gone_volumes && a->gone_volumes[i];) {
        if (state_record_find_volume(agent_record(a), a->gone_volumes[i])) {
            free(a->gone_volumes[i]);
            memmove(a->gone_volumes + i, a->gone_volumes + i + 1,
                    (strv_length((const char *const *) (a->gone_volumes + i + 1)) + 1) * sizeof(char *));
            continue;
        }
        if (a->engine->observation)
            (void) observation_remove(a->engine->observation, a->gone_volumes[i]);
        i++;
    }
}

void agent_volume_gone(Agent *a, const char *name) {
    if (!strv_contains((const char *const *) a->gone_volumes, name) && strv_extend(&a->gone_volumes, name) < 0)
        log_oom();
    agent_volumes_changed(a);
}

void agent_volumes_changed(Agent *a) {
    forget_gone(a);
    api_server_changed(a->api); /* the volumes' answers are stale now */
    agent_modules_observed(a);
    if (a->ready)
        agent_update_status(a);
}

json_object *agent_volume_json(Agent *a, const VolumeObservation *v) {
    json_object *o = NULL;
    const VolumeRecord *rec = state_record_find_volume(agent_record(a), v->name);
    if (volume_report_json(agent_layout(a), v, rec, &o) < 0)
        return NULL;
    const ApplyVolumeResult *res = apply_result_find(a->volume_results, v->name);
    const char *problem = NULL, *health = agent_volume_health(a, v, &problem);
    const char *state = volume_observation_is_up(v) ? "up" : "down";
    if (res && res->outcome == APPLY_OUTCOME_FAILED)
        state = "failed";
    else if (res && res->outcome == APPLY_OUTCOME_REFUSED)
        state = "refused";
    json_object_object_add(o, "state", json_object_new_string(state));
    json_object_object_add(o, "health", json_object_new_string(health));
    json_object_object_add(o, "message", problem ? json_object_new_string(problem) : NULL);
    const VolumeAssessment *as = agent_modules_assessment(a, v->name);
    json_object *fl = json_object_new_array();
    for (size_t i = 0; as && i < as->n; i++) {
        const VolumeFinding *f = &as->findings[i];
        json_object *j = json_object_new_object();
        json_object_object_add(j, "level", json_object_new_string(volume_health_to_string(f->level)));
        json_object_object_add(j, "code", json_object_new_string(f->code));
        json_object_object_add(j, "message", json_object_new_string(f->message));
        json_object_array_add(fl, j);
    }
    json_object_object_add(o, "findings", fl);
    CapacityUsage u;
    capacity_usage(v, &u);
    json_object *uj = NULL;
    if (u.known) {
        uj = json_object_new_object();
        json_object_object_add(uj, "bytes_percent", json_object_new_int((int) u.bytes_percent));
        json_object_object_add(uj, "inodes_percent", json_object_new_int((int) u.inodes_percent));
    }
    json_object_object_add(o, "usage", uj);
    json_object_object_add(o, "growth", NULL);
    /* Every GET is served from the cached observation: say how old it is,
     * so that a caller who just wrote can wait for figures that include it. */
    usec_t at = a->engine->observation ? a->engine->observation->taken_at : 0;
    json_object_object_add(o, "observed_at", at ? json_object_new_int64((int64_t) (at / USEC_PER_SEC)) : NULL);

    /* Active workspaces on the volume (its flush scope) and their tenant. */
    json_object *ws = json_object_new_array();
    const char *tenant = NULL;
    bool mixed = false, first = true;
    StateRecord *record = agent_record(a);
    for (size_t i = 0; i < record->n_workspaces; i++) {
        const WorkspaceRecord *w = record->workspaces[i];
        if (!w->active || !streq_ptr(w->volume, v->name))
            continue;
        json_object_array_add(ws, json_object_new_string(w->id));
        if (first)
            tenant = w->tenant;
        else if (!streq_ptr(tenant, w->tenant))
            mixed = true;
        first = false;
    }
    json_object_object_add(o, "flush_scope", json_object_new_int64((int64_t) json_object_array_length(ws)));
    json_object_object_add(o, "workspaces", ws);
    json_object_object_add(o, "tenant", !mixed && tenant ? json_object_new_string(tenant) : NULL);
    if (mixed)
        json_object_object_add(o, "mixed_tenants", json_object_new_boolean(true));

    /* The modules' keys in the places the API has always shown them
     * (json-c keeps a key where it was when its value is replaced). */
    json_object_object_add(o, "flush_probe", NULL);
    agent_modules_volume_json(a, v, o);
    return o;
}

void agent_volumes_merge_statfs(Agent *a, json_object *list) {
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

/* ---- the refresh --------------------------------------------------------- */

static void start_observe(Agent *a);

/* A volume a job works on right now, or one whose job ended after this
 * observation began, is better known from that job: its cached entry is
 * kept (an observation taken mid-apply would show a volume not mounted
 * yet, and its health would flap). */
static bool job_knows_better(const char *name, void *userdata) {
    Agent *a = userdata;
    return agent_jobs_busy(a, name) || agent_jobs_ended_since(a, name, a->observe_start_seq);
}

static void on_observed(Worker *w, int error, const char *message, ApplyResult *res, Observation *obs,
                        json_object *extra, void *userdata) {
    Agent *a = userdata;
    if (error < 0 || !obs)
        log_warning("Observing the volumes failed, keeping the previous observation: %s",
                    message ?: strerror(-error));
    else {
        (void) engine_merge_observation(a->engine, TAKE_PTR(obs), true, job_knows_better, a);
        agent_volumes_changed(a);
    }
    apply_result_free(res);
    observation_free(obs);
    json_object_put(extra);
    a->observer = worker_free(a->observer);
    if (a->observe_again) {
        a->observe_again = false;
        start_observe(a);
    }
}

static void start_observe(Agent *a) {
    WorkerRequest req = { .op = WORKER_OP_OBSERVE, .layout = agent_layout(a), .record = agent_record(a) };
    WorkerCallbacks cb = { .on_done = on_observed };
    a->observe_start_seq = a->job_seq;
    int r = worker_start(a->event, AGENT_SELF_EXE, &req, &cb, a, &a->observer);
    if (r < 0)
        log_warning_errno(r, "Cannot start the observe worker, ignoring: %m");
}

void agent_volumes_refresh(Agent *a) {
    if (a->stopping)
        return;
    if (a->observer) {
        a->observe_again = true;
        return;
    }
    start_observe(a);
}

static int on_observe_timer(sd_event_source *s, uint64_t usec, void *userdata) {
    Agent *a = userdata;
    agent_volumes_refresh(a);
    (void) sd_event_source_set_time_relative(s, OBSERVE_INTERVAL);
    (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
    return 0;
}

static void on_mounts_changed(void *userdata) {
    Agent *a = userdata;
    /* A burst of mounts (daemons starting) is one refresh: the timer is
     * pulled in, not added to. */
    usec_t next = 0;
    (void) sd_event_source_get_time(a->observe_timer, &next);
    usec_t soon = now_usec(CLOCK_MONOTONIC) + MOUNTINFO_DEBOUNCE;
    if (next > soon) {
        (void) sd_event_source_set_time(a->observe_timer, soon);
        (void) sd_event_source_set_enabled(a->observe_timer, SD_EVENT_ONESHOT);
    }
}

static int on_block_event(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
    Agent *a = userdata;
    if (block_monitor_drain(a->block_monitor) > 0)
        on_mounts_changed(a); /* the same debounced refresh */
    return 0;
}

int agent_volumes_watch(Agent *a) {
    int r = sd_event_add_time_relative(a->event, &a->observe_timer, CLOCK_MONOTONIC, OBSERVE_INTERVAL,
                                       100 * USEC_PER_MSEC, on_observe_timer, a);
    if (r < 0)
        return r;
    /* Block device events, when udevd runs (there are none without it). */
    if (block_monitor_new(&a->block_monitor) >= 0 &&
        sd_event_add_io(a->event, &a->block_source, block_monitor_fd(a->block_monitor), EPOLLIN, on_block_event,
                        a) < 0)
        a->block_monitor = block_monitor_free(a->block_monitor);
    /* The kernel says when the mount table changed: no polling. */
    return mount_monitor_new(a->event, on_mounts_changed, a, &a->mount_monitor);
}

void agent_volumes_unwatch(Agent *a) {
    a->observe_timer = sd_event_source_disable_unref(a->observe_timer);
    a->mount_monitor = mount_monitor_free(a->mount_monitor);
    a->block_source = sd_event_source_disable_unref(a->block_source);
    a->block_monitor = block_monitor_free(a->block_monitor);
    a->observer = worker_free(a->observer);
}

int agent_content_pool_args(Agent *a, const Pool *p, char ***ret, char **ret_why) {
    StateRecord *record = agent_record(a);
    _cleanup_strv_free_ char **argv = NULL;
    _cleanup_free_ char *content = NULL;
    int r;
    for (unsigned i = 0; i < p->shards; i++) {
        _cleanup_free_ char *name = NULL;
        if ((r = layout_volume_name(POOL_CONTENT, i, &name)) < 0)
            return r;
        const VolumeObservation *v = agent_volume(a, name);
        if (!v || !volume_observation_is_up(v))
            return asprintf(ret_why, "content volume %s is not in service", name) < 0 ? -ENOMEM : -EBUSY;
        _cleanup_free_ char *t = NULL;
        if (asprintf(&t, "%s%s%s", content ?: "", content ? "," : "", v->mount_path) < 0)
            return -ENOMEM;
        free(content);
        content = TAKE_PTR(t);
    }
    if ((r = strv_extend(&argv, "--content")) < 0 || (r = strv_extend(&argv, content)) < 0)
        return r;
    /* From the workspaces' side first: a workspace (active, or the kept
     * data of a removed one) whose volume the record does not list as a
     * state volume would be in no --state-root below, and the objects its
     * stubs reference would look dead. Refused, never guessed. */
    for (size_t k = 0; k < record->n_workspaces; k++) {
        const WorkspaceRecord *w = record->workspaces[k];
        const VolumeRecord *vr = w->volume ? state_record_find_volume(record, w->volume) : NULL;
        if (!vr || vr->role != POOL_STATE)
            return asprintf(ret_why, "workspace %s is on volume %s, which the record does not hold as a state "
                            "volume: its references cannot be read", w->id, w->volume ?: "(none)") < 0
                       ? -ENOMEM : -EBUSY;
    }
    for (size_t i = 0; i < record->n_volumes; i++) {
        const VolumeRecord *vr = record->volumes[i];
        if (vr->role != POOL_STATE)
            continue;
        const VolumeObservation *v = agent_volume(a, vr->name);
        bool holds = false; /* active workspaces, or the kept data of removed ones */
        for (size_t k = 0; !holds && k < record->n_workspaces; k++)
            holds = streq_ptr(record->workspaces[k]->volume, vr->name);
        if (!v || !volume_observation_is_up(v)) {
            if (holds)
                return asprintf(ret_why, "state volume %s holds workspaces but is not in service: their references "
                                "cannot be read", vr->name) < 0 ? -ENOMEM : -EBUSY;
            continue;
        }
        /* A volume with no workspace holds no reference; one being created
         * there now publishes under the pool lock, and its objects are
         * younger than the grace period. */
        if (!holds)
            continue;
        _cleanup_free_ char *dir = NULL;
        if (asprintf(&dir, "%s/workspaces", streq(v->mount_path, "/") ? "" : v->mount_path) < 0)
            return -ENOMEM;
        if ((r = strv_extend(&argv, "--state-root")) < 0 || (r = strv_extend(&argv, dir)) < 0)
            return r;
    }
    *ret = TAKE_PTR(argv);
    return 0;
}
