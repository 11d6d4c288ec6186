/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The ApiOps of the real agent: JSON views of volumes, workspaces and flush
 * scope, the mutating calls, capacity and metrics. The shapes are the
 * contract in docs/api.md.
 */
#include <grp.h>
#include <stdarg.h>
#include <inttypes.h>
#include <sys/stat.h>

#include "agent.h"
#include "log.h"
#include "place-workspaces.h"
#include "util.h"

#define J_ADD(o, k, v) json_object_object_add((o), (k), (v))
static json_object *jstr(const char *s) {
    return s ? json_object_new_string(s) : NULL;
}

static void set_error(ApiError *e, unsigned status, const char *code, const char *fmt, ...) _printf_(4, 5);
static void set_error(ApiError *e, unsigned status, const char *code, const char *fmt, ...) {
    va_list ap;
    e->status = status;
    snprintf(e->code, sizeof e->code, "%s", code);
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
}

static const ApplyVolumeResult *apply_entry(Agent *a, const char *volume) {
    for (size_t i = 0; a->last_apply && i < a->last_apply->n_volumes; i++)
        if (streq(a->last_apply->volumes[i].volume, volume))
            return &a->last_apply->volumes[i];
    return NULL;
}

/* Active workspaces on a volume, and their tenant (NULL when none or mixed). */
static json_object *volume_workspaces(Agent *a, const char *volume, const char **ret_tenant, bool *ret_mixed) {
    json_object *arr = json_object_new_array();
    const char *tenant = NULL;
    bool mixed = false, first = true;
    for (size_t i = 0; i < a->record->n_workspaces; i++) {
        const WorkspaceRecord *w = a->record->workspaces[i];
        if (!w->active || !streq_ptr(w->volume, volume))
            continue;
        json_object_array_add(arr, json_object_new_string(w->id));
        if (first)
            tenant = w->tenant;
        else if (!streq_ptr(tenant, w->tenant))
            mixed = true;
        first = false;
    }
    *ret_tenant = mixed ? NULL : tenant;
    *ret_mixed = mixed;
    return arr;
}

static json_object *volume_to_json(Agent *a, const VolumeObservation *v) {
    json_object *o = json_object_new_object();
    const VolumeRecord *rec = state_record_find_volume(a->record, v->name);
    const ApplyVolumeResult *ap = apply_entry(a, v->name);
    bool up = v->backend == BACKEND_DIR ? v->dir_exists : v->mounted_ours;

    J_ADD(o, "name", jstr(v->name));
    J_ADD(o, "role", jstr(pool_role_to_string(v->role)));
    J_ADD(o, "backend", jstr(backend_to_string(v->backend)));
    J_ADD(o, "declared", json_object_new_boolean(v->declared));
    const char *state = up ? "up" : "down";
    if (ap && ap->outcome == APPLY_OUTCOME_FAILED)
        state = "failed";
    else if (ap && ap->outcome == APPLY_OUTCOME_REFUSED)
        state = "refused";
    J_ADD(o, "state", jstr(state));
    /* ok: in service as asked; degraded: in service, but not as the layout
     * asks (direct I/O refused); failed: out of service (see message). */
    bool dio_missing = v->attached && !v->loop.direct_io && layout_pool(a->layout, v->role) &&
                       layout_pool(a->layout, v->role)->direct_io;
    J_ADD(o, "health", jstr(!up ? "failed" : dio_missing ? "degraded" : "ok"));
    J_ADD(o, "message", ap && ap->message ? jstr(ap->message) : NULL);
    J_ADD(o, "device", v->attached ? jstr(v->loop.node) : NULL);
    /* Read back from the kernel (sysfs loop/dio), never from the layout. */
    J_ADD(o, "direct_io", v->attached ? json_object_new_boolean(v->loop.direct_io) : NULL);
    J_ADD(o, "direct_io_requested", v->declared && backend_is_loop(v->backend) && layout_pool(a->layout, v->role)
                                        ? json_object_new_boolean(layout_pool(a->layout, v->role)->direct_io)
                                        : NULL);
    J_ADD(o, "logical_block_size", v->attached ? json_object_new_int64(v->loop.logical_block_size) : NULL);
    J_ADD(o, "fs_type", v->probed ? jstr(v->probe.type) : rec ? jstr(rec->fs_type) : NULL);
    J_ADD(o, "uuid", v->probed ? jstr(v->probe.uuid) : rec ? jstr(rec->fs_uuid) : NULL);
    J_ADD(o, "label", v->probed ? jstr(v->probe.label) : NULL);
    J_ADD(o, "mountpoint", jstr(v->mount_path));
    J_ADD(o, "mounted", json_object_new_boolean(up));
    J_ADD(o, "backing_file", jstr(v->backing_path));
    if (v->backing_path && v->file_exists) {
        J_ADD(o, "backing_size_bytes", json_object_new_uint64(v->file_size));
        J_ADD(o, "backing_allocated_bytes", json_object_new_uint64(v->file_allocated));
    }
    if (v->has_statvfs) {
        J_ADD(o, "size_bytes", json_object_new_uint64(v->fs_size));
        J_ADD(o, "used_bytes", json_object_new_uint64(v->fs_used));
        J_ADD(o, "free_bytes", json_object_new_uint64(v->fs_avail));
        J_ADD(o, "inodes", json_object_new_uint64(v->fs_inodes));
        J_ADD(o, "free_inodes", json_object_new_uint64(v->fs_inodes_free));
    }
    const char *tenant;
    bool mixed;
    json_object *ws = volume_workspaces(a, v->name, &tenant, &mixed);
    J_ADD(o, "flush_scope", json_object_new_int64((int64_t) json_object_array_length(ws)));
    J_ADD(o, "workspaces", ws);
    J_ADD(o, "tenant", jstr(tenant));
    if (mixed)
        J_ADD(o, "mixed_tenants", json_object_new_boolean(true));
    if (v->has_bdi) {
        json_object *b = json_object_new_object();
        J_ADD(b, "max_ratio", json_object_new_int(v->bdi.max_ratio));
        J_ADD(b, "max_bytes", v->bdi.has_max_bytes ? json_object_new_uint64(v->bdi.max_bytes) : NULL);
        J_ADD(b, "strict_limit", v->bdi.has_strict_limit ? json_object_new_boolean(v->bdi.strict_limit) : NULL);
        J_ADD(o, "writeback", b);
    }
    if (v->has_io) {
        json_object *s = json_object_new_object();
        J_ADD(s, "read_ios", json_object_new_uint64(v->io.read_ios));
        J_ADD(s, "read_bytes", json_object_new_uint64(v->io.read_sectors * 512));
        J_ADD(s, "write_ios", json_object_new_uint64(v->io.write_ios));
        J_ADD(s, "write_bytes", json_object_new_uint64(v->io.write_sectors * 512));
        J_ADD(s, "in_flight", json_object_new_uint64(v->io.in_flight));
        J_ADD(s, "io_ticks_ms", json_object_new_uint64(v->io.io_ticks_ms));
        J_ADD(o, "io", s);
    }
    FlushProbe *p = agent_flush_probe_find(a, v->name);
    if (p) {
        json_object *f = json_object_new_object();
        J_ADD(f, "last_seconds", p->has_last ? json_object_new_double((double) p->last / USEC_PER_SEC) : NULL);
        J_ADD(f, "samples", json_object_new_uint64(p->histogram.count));
        J_ADD(f, "last_error", p->last_error ? jstr(strerror(p->last_error)) : NULL);
        J_ADD(o, "flush_probe", f);
    } else
        J_ADD(o, "flush_probe", NULL);
    agent_vdo_volume_json(a, v, o); /* "vdo": stats, fstrim; health degraded on read-only */
    return o;
}

static int op_list_volumes(void *userdata, json_object **ret, ApiError *err) {
    Agent *a = userdata;
    _cleanup_(observation_freep) Observation *obs = NULL;
    int r = agent_volumes_observe(a, &obs);
    if (r < 0)
        return r;
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < obs->n; i++)
        json_object_array_add(arr, volume_to_json(a, &obs->volumes[i]));
    json_object *o = json_object_new_object();
    J_ADD(o, "volumes", arr);
    *ret = o;
    return 0;
}

static int op_get_volume(void *userdata, const char *name, json_object **ret, ApiError *err) {
    Agent *a = userdata;
    _cleanup_(observation_freep) Observation *obs = NULL;
    int r = agent_volumes_observe(a, &obs);
    if (r < 0)
        return r;
    const VolumeObservation *v = observation_find(obs, name);
    if (!v) {
        set_error(err, 404, "not_found", "no volume named '%s'", name);
        return -ENOENT;
    }
    *ret = volume_to_json(a, v);
    return 0;
}

static json_object *workspace_to_json(Agent *a, const WorkspaceRecord *w) {
    json_object *o = json_object_new_object();
    J_ADD(o, "id", jstr(w->id));
    J_ADD(o, "tenant", jstr(w->tenant));
    J_ADD(o, "quota_bytes", json_object_new_uint64(w->quota));
    J_ADD(o, "created_at", json_object_new_int64((int64_t) (w->created_at / USEC_PER_SEC)));
    J_ADD(o, "active", json_object_new_boolean(w->active));
    J_ADD(o, "volume", jstr(w->volume));
    J_ADD(o, "state_dir", jstr(w->state_dir));
    J_ADD(o, "mountpoint", jstr(w->mountpoint));
    json_object *labels = json_object_new_object();
    for (char **l = w->labels; l && *l; l++) {
        const char *eq = strchr(*l, '=');
        if (!eq)
            continue;
        _cleanup_free_ char *k = strndup(*l, (size_t) (eq - *l));
        if (k)
            J_ADD(labels, k, json_object_new_string(eq + 1));
    }
    J_ADD(o, "labels", labels);
    /* Flush scope: every active workspace sharing the volume, itself too. */
    json_object *neigh = json_object_new_array();
    size_t scope = 0;
    for (size_t i = 0; i < a->record->n_workspaces; i++) {
        const WorkspaceRecord *x = a->record->workspaces[i];
        if (!x->active || !streq_ptr(x->volume, w->volume))
            continue;
        scope++;
        if (!streq(x->id, w->id))
            json_object_array_add(neigh, json_object_new_string(x->id));
    }
    J_ADD(o, "neighbours", neigh);
    J_ADD(o, "flush_scope", json_object_new_int64((int64_t) (w->active ? scope : 0)));

    json_object *d = json_object_new_object();
    WorkspaceStatus st;
    if (a->supervisor && supervisor_get_status(a->supervisor, w->id, &st) >= 0) {
        usec_t now = now_usec(CLOCK_MONOTONIC);
        J_ADD(d, "state", jstr(supervisor_state_to_string(st.state)));
        J_ADD(d, "pid", st.pid > 0 ? json_object_new_int(st.pid) : NULL);
        J_ADD(d, "adopted", json_object_new_boolean(st.adopted));
        J_ADD(d, "restarts", json_object_new_int64(st.restarts));
        if (st.exited) {
            json_object *e = json_object_new_object();
            J_ADD(e, "status", st.exit_status >= 0 ? json_object_new_int(st.exit_status) : NULL);
            J_ADD(e, "signal", st.exit_signal ? jstr(sigabbrev_np(st.exit_signal)) : NULL);
            J_ADD(d, "last_exit", e);
        } else
            J_ADD(d, "last_exit", NULL);
        J_ADD(d, "uptime_seconds", st.running_since ? json_object_new_double((double) (now - st.running_since) / USEC_PER_SEC)
                                                     : NULL);
        J_ADD(d, "ready_latency_seconds",
              st.ready_latency ? json_object_new_double((double) st.ready_latency / USEC_PER_SEC) : NULL);
        J_ADD(d, "next_restart_in_seconds",
              st.state == SUPERVISOR_BACKOFF ? json_object_new_double((double) st.next_delay / USEC_PER_SEC) : NULL);
        json_object *delays = json_object_new_array();
        for (unsigned i = 0; i < st.n_delays; i++)
            json_object_array_add(delays, json_object_new_double((double) st.delays[i] / USEC_PER_SEC));
        J_ADD(d, "backoff_delays_seconds", delays);
        J_ADD(d, "hangs", json_object_new_int64(st.hangs));
    } else {
        J_ADD(d, "state", jstr(w->active ? "unsupervised" : "removed"));
        J_ADD(d, "restarts", json_object_new_int64(w->daemon.restarts));
    }
    J_ADD(o, "daemon", d);
    return o;
}

static int op_list_workspaces(void *userdata, json_object **ret, ApiError *err) {
    Agent *a = userdata;
    WorkspaceRecord **list = NULL;
    size_t n = 0;
    int r = place_workspace_list(a->record, NULL, false, &list, &n);
    if (r < 0)
        return r;
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < n; i++)
        json_object_array_add(arr, workspace_to_json(a, list[i]));
    free(list);
    json_object *o = json_object_new_object();
    J_ADD(o, "workspaces", arr);
    *ret = o;
    return 0;
}

static int op_get_workspace(void *userdata, const char *id, json_object **ret, ApiError *err) {
    Agent *a = userdata;
    WorkspaceRecord *w = place_workspace_get(a->record, id);
    if (!w) {
        set_error(err, 404, "not_found", "no workspace '%s'", id);
        return -ENOENT;
    }
    *ret = workspace_to_json(a, w);
    return 0;
}

static void place_error_to_api(int r, const PlaceError *pe, ApiError *err) {
    const char *msg = pe->message ? pe->message : strerror(-r);
    switch (r) {
    case -EINVAL:
        set_error(err, 400, "invalid_request", "%s", msg);
        break;
    case -EOPNOTSUPP:
        set_error(err, 400, "not_supported", "%s", msg);
        break;
    case -EEXIST:
    case -EACCES:
    case -EBUSY:
        set_error(err, 409, "conflict", "%s", msg);
        break;
    case -ENOSPC:
        set_error(err, 507, "pool_full", "%s", msg);
        break;
    case -EROFS:
        set_error(err, 503, "volume_unavailable", "%s", msg);
        break;
    default:
        set_error(err, 500, "internal", "%s", msg);
    }
}

static int op_create_workspace(void *userdata, const ApiWorkspaceRequest *req, json_object **ret, ApiError *err) {
    Agent *a = userdata;
    _cleanup_strv_free_ char **labels = NULL;
    PlaceContext ctx;
    PlaceError pe = {};
    WorkspaceRecord *w = NULL;
    int r;

    if (!a->supervisor) {
        set_error(err, 503, "not_supervising", "the agent runs without workspaces (--no-workspaces)");
        return -EOPNOTSUPP;
    }
    if (req->labels) {
        json_object_object_foreach(req->labels, k, v) {
            _cleanup_free_ char *kv = NULL;
            if (asprintf(&kv, "%s=%s", k, json_object_get_string(v)) < 0 || strv_extend(&labels, kv) < 0)
                return -ENOMEM;
        }
    }
    WorkspaceRecord *old = place_workspace_get(a->record, req->id);
    PlaceCreateRequest pr = {
        .id = req->id,
        .tenant = req->tenant,
        .quota = req->quota,
        .labels = labels,
        /* Asking for an id whose data was kept means asking for it back. */
        .reclaim = old && !old->active,
    };
    agent_place_context(a, &ctx);
    a->api_creates++;
    r = place_workspace_create(&ctx, &pr, &w, &pe);
    if (r < 0) {
        a->api_create_failures++;
        place_error_to_api(r, &pe, err);
        log_warning("workspace %s: create refused: %s", req->id, err->message);
        place_error_done(&pe);
        return r;
    }
    log_info("workspace %s: placed on volume %s (%s)", w->id, w->volume, w->state_dir);
    r = agent_workspace_spawn(a, w);
    if (r < 0) {
        set_error(err, 500, "spawn_failed", "workspace %s was placed on %s but its daemon could not be started: %s",
                  w->id, w->volume, strerror(-r));
        return r;
    }
    *ret = workspace_to_json(a, w);
    return 0;
}

typedef struct RemoveJob {
    Agent *agent;
    bool destroy;
} RemoveJob;

static void on_removed(Supervisor *s, const char *id, void *userdata) {
    RemoveJob *job = userdata;
    Agent *a = job->agent;
    PlaceContext ctx;
    PlaceError pe = {};
    agent_place_context(a, &ctx);
    int r = place_workspace_remove(&ctx, id, job->destroy ? PLACE_REMOVE_DESTROY : 0, &pe);
    if (r < 0)
        log_error_errno(r, "workspace %s: stopped, but removing it failed: %s", id, pe.message ? pe.message : "%m");
    else
        log_info("workspace %s: removed (%s)", id, job->destroy ? "data destroyed" : "data kept");
    place_error_done(&pe);
    free(job);
    agent_update_status(a);
}

static int op_delete_workspace(void *userdata, const char *id, bool destroy_data, json_object **ret, ApiError *err) {
    Agent *a = userdata;
    WorkspaceRecord *w = place_workspace_get(a->record, id);
    if (!w || (!w->active && !destroy_data)) {
        set_error(err, 404, "not_found", "no active workspace '%s'", id);
        return -ENOENT;
    }
    RemoveJob *job = calloc(1, sizeof *job);
    if (!job)
        return -ENOMEM;
    *job = (RemoveJob) { .agent = a, .destroy = destroy_data };
    int r = a->supervisor ? supervisor_remove(a->supervisor, id, on_removed, job) : -ENOENT;
    if (r == -EALREADY) {
        free(job);
        set_error(err, 409, "conflict", "workspace '%s' is already being removed", id);
        return r;
    }
    if (r == -ENOENT)
        on_removed(a->supervisor, id, job); /* no daemon to stop */
    else if (r < 0) {
        free(job);
        return r;
    }
    json_object *o = json_object_new_object();
    J_ADD(o, "id", jstr(id));
    J_ADD(o, "removed", json_object_new_boolean(true));
    J_ADD(o, "data_destroyed", json_object_new_boolean(destroy_data));
    /* The daemon stops first; the record and data follow when it is gone. */
    J_ADD(o, "state", jstr(r == -ENOENT ? "removed" : "stopping"));
    *ret = o;
    return 0;
}

static int op_restart_workspace(void *userdata, const char *id, json_object **ret, ApiError *err) {
    Agent *a = userdata;
    int r = a->supervisor ? supervisor_restart(a->supervisor, id) : -ENOENT;
    if (r == -ENOENT) {
        set_error(err, 404, "not_found", "no supervised workspace '%s'", id);
        return r;
    }
    if (r == -EBUSY) {
        set_error(err, 409, "conflict", "workspace '%s' is being stopped", id);
        return r;
    }
    if (r < 0)
        return r;
    log_info("workspace %s: restart requested through the API", id);
    json_object *o = json_object_new_object();
    J_ADD(o, "id", jstr(id));
    J_ADD(o, "restarting", json_object_new_boolean(true));
    *ret = o;
    return 0;
}

static int op_reload(void *userdata, json_object **ret, ApiError *err) {
    Agent *a = userdata;
    _cleanup_free_ char *error = NULL;
    uint64_t generation = a->generation;
    int r = agent_reload(a, &error);
    if (r < 0) {
        set_error(err, 400, "invalid_layout", "%s", error ? error : "invalid layout");
        return r;
    }
    json_object *o = json_object_new_object();
    J_ADD(o, "reloaded", json_object_new_boolean(true));
    J_ADD(o, "changed", json_object_new_boolean(a->generation != generation));
    J_ADD(o, "generation", json_object_new_uint64(a->generation));
    J_ADD(o, "layout_hash", jstr(a->layout_hash));
    *ret = o;
    return 0;
}

static int op_status(void *userdata, json_object **ret, ApiError *err) {
    Agent *a = userdata;
    json_object *o = json_object_new_object();
    usec_t now = now_usec(CLOCK_MONOTONIC);
    J_ADD(o, "version", jstr(LAYOUTD_VERSION));
    J_ADD(o, "state", jstr(a->stopping ? "stopping" : a->ready ? "ready" : "starting"));
    J_ADD(o, "pid", json_object_new_int(getpid()));
    J_ADD(o, "uptime_sec", json_object_new_int64((int64_t) ((now - a->started_mono) / USEC_PER_SEC)));
    json_object *l = json_object_new_object();
    J_ADD(l, "path", jstr(a->layout_path));
    J_ADD(l, "hash", jstr(a->layout_hash));
    J_ADD(l, "root", jstr(a->layout->root));
    J_ADD(o, "layout", l);
    J_ADD(o, "generation", json_object_new_uint64(a->generation));

    json_object *problems = json_object_new_array();
    size_t total = a->last_apply ? a->last_apply->n_volumes : 0, up = agent_volumes_up(a);
    for (size_t i = 0; i < total; i++) {
        const ApplyVolumeResult *v = &a->last_apply->volumes[i];
        if (v->outcome == APPLY_OUTCOME_FAILED || v->outcome == APPLY_OUTCOME_REFUSED) {
            json_object *p = json_object_new_object();
            J_ADD(p, "volume", jstr(v->volume));
            J_ADD(p, "message", jstr(v->message ? v->message : apply_outcome_to_string(v->outcome)));
            json_object_array_add(problems, p);
        }
        for (char **n = v->notes; n && *n; n++) {
            json_object *p = json_object_new_object();
            J_ADD(p, "volume", jstr(v->volume));
            J_ADD(p, "message", jstr(*n));
            json_object_array_add(problems, p);
        }
    }
    json_object *v = json_object_new_object();
    J_ADD(v, "total", json_object_new_int64((int64_t) total));
    J_ADD(v, "ok", json_object_new_int64((int64_t) up));
    J_ADD(v, "degraded", json_object_new_int64((int64_t) (total - up)));
    J_ADD(o, "volumes", v);

    size_t counts[_SUPERVISOR_STATE_MAX] = {}, n = a->supervisor ? supervisor_count(a->supervisor) : 0;
    for (size_t i = 0; i < n; i++) {
        WorkspaceStatus st;
        if (supervisor_get_status_by_index(a->supervisor, i, &st) < 0 || st.state < 0 || st.state >= _SUPERVISOR_STATE_MAX)
            continue;
        counts[st.state]++;
        if (st.state == SUPERVISOR_FAILED) {
            json_object *p = json_object_new_object();
            J_ADD(p, "workspace", jstr(st.id));
            J_ADD(p, "message", jstr("the FUSE daemon hit its crash-loop limit; `layoutctl restart` brings it back"));
            json_object_array_add(problems, p);
        }
    }
    json_object *w = json_object_new_object(), *by = json_object_new_object();
    J_ADD(w, "total", json_object_new_int64((int64_t) n));
    J_ADD(w, "running", json_object_new_int64((int64_t) counts[SUPERVISOR_RUNNING]));
    J_ADD(w, "failed", json_object_new_int64((int64_t) counts[SUPERVISOR_FAILED]));
    for (SupervisorState s = 0; s < _SUPERVISOR_STATE_MAX; s++)
        J_ADD(by, supervisor_state_to_string(s), json_object_new_int64((int64_t) counts[s]));
    J_ADD(w, "by_state", by);
    J_ADD(o, "workspaces", w);

    if (a->last_reload_error) {
        json_object *e = json_object_new_object();
        J_ADD(e, "message", jstr(a->last_reload_error));
        J_ADD(e, "at", json_object_new_int64((int64_t) (a->last_reload_at / USEC_PER_SEC)));
        J_ADD(o, "last_reload_error", e);
        json_object *p = json_object_new_object();
        J_ADD(p, "message", jstr("the last reload was refused; the previous layout keeps running"));
        json_object_array_add(problems, p);
    } else
        J_ADD(o, "last_reload_error", NULL);
    bool healthy = up == total && counts[SUPERVISOR_FAILED] == 0 && counts[SUPERVISOR_BACKOFF] == 0;
    J_ADD(o, "health", jstr(healthy ? "ok" : "degraded"));
    J_ADD(o, "problems", problems);
    *ret = o;
    return 0;
}

/* What a cluster scheduler reads to place workspaces onto hosts: per pool,
 * how many more workspaces fit before its maximum (free slots in the
 * volumes that are up, plus those of volumes it may still carve). */
static int op_capacity(void *userdata, json_object **ret, ApiError *err) {
    Agent *a = userdata;
    _cleanup_(observation_freep) Observation *obs = NULL;
    int r = agent_volumes_observe(a, &obs);
    if (r < 0)
        return r;
    json_object *pools = json_object_new_array();
    uint64_t host_free_slots = 0;
    for (PoolRole role = 0; role < _POOL_ROLE_MAX; role++) {
        const Pool *p = layout_pool(a->layout, role);
        if (!p)
            continue;
        json_object *o = json_object_new_object();
        uint64_t size = 0, used = 0, free_bytes = 0, free_slots = 0, workspaces = 0;
        unsigned volumes = 0;
        for (size_t i = 0; i < obs->n; i++) {
            const VolumeObservation *v = &obs->volumes[i];
            if (v->role != role || !v->declared)
                continue;
            volumes++;
            bool up = v->backend == BACKEND_DIR ? v->dir_exists : v->mounted_ours;
            if (v->has_statvfs) {
                size += v->fs_size;
                used += v->fs_used;
                free_bytes += v->fs_avail;
            }
            if (role != POOL_STATE)
                continue;
            size_t n = state_record_count_workspaces(a->record, v->name);
            workspaces += n;
            if (up && n < p->workspaces_per_volume)
                free_slots += p->workspaces_per_volume - n;
        }
        J_ADD(o, "role", jstr(pool_role_to_string(role)));
        J_ADD(o, "backend", jstr(backend_to_string(p->backend)));
        J_ADD(o, "volumes", json_object_new_int64(volumes));
        J_ADD(o, "size_bytes", json_object_new_uint64(size));
        J_ADD(o, "used_bytes", json_object_new_uint64(used));
        J_ADD(o, "free_bytes", json_object_new_uint64(free_bytes));
        if (role == POOL_STATE) {
            unsigned carvable = p->max_volumes > volumes ? p->max_volumes - volumes : 0;
            free_slots += (uint64_t) carvable * p->workspaces_per_volume;
            J_ADD(o, "max_volumes", json_object_new_int64(p->max_volumes));
            J_ADD(o, "carvable_volumes", json_object_new_int64(carvable));
            J_ADD(o, "carvable_bytes", json_object_new_uint64((uint64_t) carvable * p->volume_size));
            J_ADD(o, "workspaces_per_volume", json_object_new_int64(p->workspaces_per_volume));
            J_ADD(o, "workspaces", json_object_new_uint64(workspaces));
            J_ADD(o, "workspace_slots", json_object_new_uint64((uint64_t) p->max_volumes * p->workspaces_per_volume));
            J_ADD(o, "workspace_slots_free", json_object_new_uint64(free_slots));
            host_free_slots += free_slots;
        }
        json_object_array_add(pools, o);
    }
    json_object *o = json_object_new_object();
    J_ADD(o, "pools", pools);
    J_ADD(o, "workspace_slots_free", json_object_new_uint64(host_free_slots));
    *ret = o;
    return 0;
}

static int op_metrics(void *userdata, MetricsWriter *w, ApiError *err) {
    Agent *a = userdata;
    _cleanup_(observation_freep) Observation *obs = NULL;
    int r = agent_volumes_observe(a, &obs);
    if (r < 0)
        return r;

    (void) metrics_writer_family(w, "layoutd_info", METRIC_GAUGE, "layoutd version and layout generation");
    char gen[32];
    snprintf(gen, sizeof gen, "%" PRIu64, a->generation);
    (void) metrics_writer_sample(w, (const char *const[]) { "version", LAYOUTD_VERSION, "layout_hash", a->layout_hash, "generation", gen, NULL }, 1);
    (void) metrics_writer_family(w, "layoutd_uptime_seconds", METRIC_GAUGE, "Seconds since the agent started");
    (void) metrics_writer_sample(w, NULL, (double) (now_usec(CLOCK_MONOTONIC) - a->started_mono) / USEC_PER_SEC);
    (void) metrics_writer_family(w, "layoutd_reload_error", METRIC_GAUGE, "1 when the last reload was refused");
    (void) metrics_writer_sample(w, NULL, a->last_reload_error ? 1 : 0);

#define VOLUME_FAMILY(family, type, help, expr)                                                   \
    do {                                                                                        \
        (void) metrics_writer_family(w, family, type, help);                                   \
        for (size_t i = 0; i < obs->n; i++) {                                                   \
            const VolumeObservation *v = &obs->volumes[i];                                      \
            const char *const labels[] = { "volume", v->name, "pool", pool_role_to_string(v->role), \
                                           "backend", backend_to_string(v->backend), NULL };    \
            double value;                                                                       \
            if (!(expr))                                                                        \
                continue;                                                                       \
            (void) metrics_writer_sample(w, labels, value);                                     \
        }                                                                                       \
    } while (0)

    VOLUME_FAMILY("layoutd_volume_up", METRIC_GAUGE, "1 when the volume is mounted and in service",
                  (value = (v->backend == BACKEND_DIR ? v->dir_exists : v->mounted_ours), true));
    VOLUME_FAMILY("layoutd_volume_direct_io", METRIC_GAUGE, "1 when the kernel reports the loop device in direct-I/O mode",
                  v->attached && (value = v->loop.direct_io, true));
    VOLUME_FAMILY("layoutd_volume_workspaces", METRIC_GAUGE, "Active workspaces placed on the volume (its flush scope)",
                  (value = (double) state_record_count_workspaces(a->record, v->name), true));
    VOLUME_FAMILY("layoutd_volume_size_bytes", METRIC_GAUGE, "Filesystem size",
                  v->has_statvfs && (value = (double) v->fs_size, true));
    VOLUME_FAMILY("layoutd_volume_free_bytes", METRIC_GAUGE, "Filesystem bytes available",
                  v->has_statvfs && (value = (double) v->fs_avail, true));
    VOLUME_FAMILY("layoutd_volume_free_inodes", METRIC_GAUGE, "Filesystem inodes free",
                  v->has_statvfs && (value = (double) v->fs_inodes_free, true));
    VOLUME_FAMILY("layoutd_volume_backing_allocated_bytes", METRIC_GAUGE, "Bytes allocated to the sparse backing file",
                  v->backing_path && v->file_exists && (value = (double) v->file_allocated, true));
    VOLUME_FAMILY("layoutd_volume_read_bytes_total", METRIC_COUNTER, "Bytes read from the volume's block device",
                  v->has_io && (value = (double) v->io.read_sectors * 512, true));
    VOLUME_FAMILY("layoutd_volume_written_bytes_total", METRIC_COUNTER, "Bytes written to the volume's block device",
                  v->has_io && (value = (double) v->io.write_sectors * 512, true));
    VOLUME_FAMILY("layoutd_volume_writeback_max_bytes", METRIC_GAUGE, "bdi max_bytes of the volume's loop device",
                  v->has_bdi && v->bdi.has_max_bytes && (value = (double) v->bdi.max_bytes, true));
#undef VOLUME_FAMILY

    agent_vdo_metrics(a, obs, w); /* layoutd_vdo_* families */
    (void) metrics_writer_family(w, "layoutd_volume_flush_probe_seconds", METRIC_HISTOGRAM,
                                 "Time to write and fsync a 4 KiB probe file on the volume (its flush cost)");
    for (size_t i = 0; i < a->n_probes; i++) {
        const FlushProbe *p = &a->probes[i];
        (void) metrics_histogram_write(&p->histogram, w, (const char *const[]) { "volume", p->volume, NULL });
    }

    size_t n = a->supervisor ? supervisor_count(a->supervisor) : 0;
    WorkspaceStatus *sts = calloc(MAX(n, 1u), sizeof(WorkspaceStatus));
    if (!sts)
        return -ENOMEM;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (supervisor_get_status_by_index(a->supervisor, i, &sts[m]) >= 0)
            m++;
    (void) metrics_writer_family(w, "layoutd_workspace_up", METRIC_GAUGE, "1 when the workspace's FUSE daemon is running and mounted");
    for (size_t i = 0; i < m; i++) {
        const WorkspaceRecord *rec = state_record_find_workspace(a->record, sts[i].id);
        (void) metrics_writer_sample(w, (const char *const[]) { "workspace", sts[i].id, "volume", rec && rec->volume ? rec->volume : "", NULL },
                                     sts[i].state == SUPERVISOR_RUNNING);
    }
    (void) metrics_writer_family(w, "layoutd_workspace_restarts_total", METRIC_COUNTER, "Restarts of the workspace's FUSE daemon");
    for (size_t i = 0; i < m; i++)
        (void) metrics_writer_sample(w, (const char *const[]) { "workspace", sts[i].id, NULL }, sts[i].restarts);
    (void) metrics_writer_family(w, "layoutd_workspace_state", METRIC_GAUGE, "1 for the workspace's current supervision state");
    for (size_t i = 0; i < m; i++)
        (void) metrics_writer_sample(w, (const char *const[]) { "workspace", sts[i].id, "state", supervisor_state_to_string(sts[i].state), NULL }, 1);
    (void) metrics_writer_family(w, "layoutd_workspace_flush_scope", METRIC_GAUGE, "Workspaces sharing this workspace's volume, itself included");
    for (size_t i = 0; i < m; i++) {
        const WorkspaceRecord *rec = state_record_find_workspace(a->record, sts[i].id);
        if (rec && rec->volume)
            (void) metrics_writer_sample(w, (const char *const[]) { "workspace", sts[i].id, NULL },
                                         (double) state_record_count_workspaces(a->record, rec->volume));
    }
    free(sts);
    (void) metrics_writer_family(w, "layoutd_workspace_creates_total", METRIC_COUNTER, "Workspace creations asked through the API");
    (void) metrics_writer_sample(w, NULL, (double) a->api_creates);
    (void) metrics_writer_family(w, "layoutd_workspace_create_failures_total", METRIC_COUNTER, "Workspace creations refused or failed");
    (void) metrics_writer_sample(w, NULL, (double) a->api_create_failures);
    return 0;
}

const ApiOps agent_api_ops = {
    .status = op_status,
    .list_volumes = op_list_volumes,
    .get_volume = op_get_volume,
    .list_workspaces = op_list_workspaces,
    .get_workspace = op_get_workspace,
    .create_workspace = op_create_workspace,
    .delete_workspace = op_delete_workspace,
    .restart_workspace = op_restart_workspace,
    .reload = op_reload,
    .capacity = op_capacity,
    .metrics = op_metrics,
};

static void api_log(void *userdata, int priority, const char *message) {
    log_internal(priority, 0, "api: %s", message);
}

int agent_api_start(Agent *a) {
    const ApiConfig *c = &a->layout->api;
    const char *path = a->options.socket ? a->options.socket : c->socket_path;
    _cleanup_free_ char *dir = strdup(path);
    int fd = -EBADF, r;
    gid_t gid;

    if (!dir)
        return log_error_errno(ENOMEM, "Out of memory");
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        r = mkdir_p(dir, 0755);
        if (r < 0)
            return log_error_errno(r, "Failed to create %s: %m", dir);
    }
    r = api_socket_open(path, c->socket_group, c->socket_mode, &fd, &gid);
    if (r < 0)
        return log_error_errno(r, "Failed to open the API socket %s: %m", path);
    if (c->socket_group && gid == GID_INVALID)
        log_notice("Group '%s' does not exist: the API socket stays root-only for changes", c->socket_group);
    ApiServerConfig sc = {
        .max_body = c->max_body,
        .connection_limit = c->max_connections,
        .request_timeout_sec = (unsigned) (c->request_timeout / USEC_PER_SEC),
        .group = gid,
        .log = api_log,
    };
    r = api_new(a->event, fd, &sc, &agent_api_ops, a, &a->api);
    if (r < 0)
        return log_error_errno(r, "Failed to start the API on %s: %m", path);
    a->socket_path = strdup(path);
    api_set_state(a->api, API_STATE_STARTING);
    log_info("API listening on %s", path);
    return 0;
}
