/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The agent's handlers for the status API (one per route, the table at the
 * end) and its metrics. Reads are answered from the cached observation,
 * the record and the supervisor: no handler touches a device or blocks.
 * The shapes are the contract in docs/api.md.
 */
#include <grp.h>
#include <inttypes.h>
#include <sys/stat.h>

#include "agent.h"
#include "log.h"
#include "place-workspaces.h"
#include "util.h"
#include "volume-report.h"

#define J_ADD(o, k, v) json_object_object_add((o), (k), (v))
static json_object *jstr(const char *s) {
    return s ? json_object_new_string(s) : NULL;
}

static int h_volumes(void *userdata, ApiCall *call) {
    Agent *a = userdata;
    const Observation *obs = a->engine->observation;
    json_object *arr = json_object_new_array();
    for (size_t i = 0; obs && i < obs->n; i++) {
        json_object *v = agent_volume_json(a, &obs->volumes[i]);
        if (v)
            json_object_array_add(arr, v);
    }
    call->reply = json_object_new_object();
    J_ADD(call->reply, "volumes", arr);
    return 0;
}

static int h_volume(void *userdata, ApiCall *call) {
    Agent *a = userdata;
    const VolumeObservation *v = agent_volume(a, call->param);
    if (!v)
        return api_error_set(&call->error, -ENOENT, 404, "not_found", "no volume named '%s'", call->param);
    call->reply = agent_volume_json(a, v);
    return call->reply ? 0 : -ENOMEM;
}

static int h_workspaces(void *userdata, ApiCall *call) {
    Agent *a = userdata;
    WorkspaceRecord **list = NULL;
    size_t n = 0;
    int r = place_workspace_list(agent_record(a), NULL, false, &list, &n);
    if (r < 0)
        return r;
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < n; i++)
        json_object_array_add(arr, agent_workspace_json(a, list[i]));
    free(list);
    call->reply = json_object_new_object();
    J_ADD(call->reply, "workspaces", arr);
    return 0;
}

static int h_workspace(void *userdata, ApiCall *call) {
    Agent *a = userdata;
    WorkspaceRecord *w = place_workspace_get(agent_record(a), call->param);
    if (!w)
        return api_error_set(&call->error, -ENOENT, 404, "not_found", "no workspace '%s'", call->param);
    call->reply = agent_workspace_json(a, w);
    return 0;
}

static int h_create(void *userdata, ApiCall *call) {
    Agent *a = userdata;
    int r = agent_workspace_create(a, call->workspace, call->operation, &call->error);
    if (r < 0)
        return r;
    WorkspaceRecord *w = place_workspace_get(agent_record(a), call->workspace->id);
    if (w && w->active)
        call->reply = agent_workspace_json(a, w); /* what a 202 shows while the daemon starts */
    return 1;
}

static int h_delete(void *userdata, ApiCall *call) {
    Agent *a = userdata;
    int r = agent_workspace_remove(a, call->param, call->query->destroy_data, call->operation, &call->error);
    if (r < 0)
        return r;
    call->reply = json_object_new_object();
    J_ADD(call->reply, "id", jstr(call->param));
    J_ADD(call->reply, "removed", json_object_new_boolean(true));
    J_ADD(call->reply, "data_destroyed", json_object_new_boolean(call->query->destroy_data));
    J_ADD(call->reply, "state", jstr("stopping"));
    return 1;
}

static int h_restart(void *userdata, ApiCall *call) {
    Agent *a = userdata;
    int r = agent_workspace_restart(a, call->param, call->operation, &call->error);
    if (r < 0)
        return r;
    call->reply = json_object_new_object();
    J_ADD(call->reply, "id", jstr(call->param));
    J_ADD(call->reply, "restarting", json_object_new_boolean(true));
    return 1;
}

static int h_quota(void *userdata, ApiCall *call) {
    return agent_quota_set(userdata, call->param, call->quota, call->operation, &call->error);
}

static int h_reload(void *userdata, ApiCall *call) {
    Agent *a = userdata;
    _cleanup_free_ char *error = NULL;
    int r = agent_reload(a, call->operation, &error);
    if (r < 0)
        return api_error_set(&call->error, r, 400, "invalid_layout", "%s", error ?: "invalid layout");
    return 1;
}

/* The problems an operator must see (capacity_problems), from what the
 * agent knows now. The agent's health is the worst level. */
/* The agent's health: a failed volume or workspace makes the host
 * degraded, not failed (the rest serves). */
static const char *agent_health_word(VolumeHealth h) {
    return h == VOLUME_HEALTH_OK ? "ok" : h == VOLUME_HEALTH_WARNING ? "warning" : "degraded";
}

static int h_status(void *userdata, ApiCall *call) {
    Agent *a = userdata;
    json_object *o = json_object_new_object();
    usec_t now = now_usec(CLOCK_MONOTONIC);
    J_ADD(o, "version", jstr(LAYOUTD_VERSION));
    J_ADD(o, "state", jstr(a->stopping ? "stopping" : a->ready ? "ready" : "starting"));
    J_ADD(o, "pid", json_object_new_int(getpid()));
    J_ADD(o, "uptime_sec", json_object_new_int64((int64_t) ((now - a->started_mono) / USEC_PER_SEC)));
    json_object *l = json_object_new_object();
    J_ADD(l, "path", jstr(a->engine->layout_path));
    J_ADD(l, "hash", jstr(a->engine->layout_hash));
    J_ADD(l, "root", jstr(agent_layout(a)->root));
    J_ADD(o, "layout", l);
    J_ADD(o, "generation", json_object_new_uint64(a->generation));

    /* Volumes by health (of those the layout declares or the record
     * holds), and how many are in service. */
    size_t total = 0, counts_by_health[_VOLUME_HEALTH_MAX] = {};
    const Observation *obs = a->engine->observation;
    for (size_t i = 0; obs && i < obs->n; i++) {
        const VolumeObservation *vo = &obs->volumes[i];
        if (!vo->declared && !state_record_find_volume(agent_record(a), vo->name))
            continue;
        total++;
        VolumeHealth h = volume_health_from_string(agent_volume_health(a, vo, NULL));
        if (h >= 0)
            counts_by_health[h]++;
    }
    json_object *v = json_object_new_object();
    J_ADD(v, "total", json_object_new_int64((int64_t) total));
    J_ADD(v, "up", json_object_new_int64((int64_t) agent_volumes_up(a)));
    for (VolumeHealth h = 0; h < _VOLUME_HEALTH_MAX; h++)
        J_ADD(v, volume_health_to_string(h), json_object_new_int64((int64_t) counts_by_health[h]));
    J_ADD(o, "volumes", v);

    size_t counts[_SUPERVISOR_STATE_MAX] = {}, n = a->supervisor ? supervisor_count(a->supervisor) : 0;
    for (size_t i = 0; i < n; i++) {
        WorkspaceStatus st;
        if (supervisor_get_status_by_index(a->supervisor, i, &st) >= 0 && st.state >= 0 &&
            st.state < _SUPERVISOR_STATE_MAX)
            counts[st.state]++;
    }
    json_object *w = json_object_new_object(), *by = json_object_new_object();
    J_ADD(w, "total", json_object_new_int64((int64_t) n));
    J_ADD(w, "running", json_object_new_int64((int64_t) counts[SUPERVISOR_RUNNING]));
    J_ADD(w, "failed", json_object_new_int64((int64_t) counts[SUPERVISOR_FAILED]));
    for (SupervisorState s = 0; s < _SUPERVISOR_STATE_MAX; s++)
        J_ADD(by, supervisor_state_to_string(s), json_object_new_int64((int64_t) counts[s]));
    J_ADD(w, "by_state", by);
    J_ADD(o, "workspaces", w);
    J_ADD(o, "jobs", json_object_new_int64((int64_t) agent_jobs_count(a)));

    if (a->last_reload_error) {
        json_object *e = json_object_new_object();
        J_ADD(e, "message", jstr(a->last_reload_error));
        J_ADD(e, "at", json_object_new_int64((int64_t) (a->last_reload_at / USEC_PER_SEC)));
        J_ADD(o, "last_reload_error", e);
    } else
        J_ADD(o, "last_reload_error", NULL);
    VolumeHealth worst;
    json_object *p = agent_problems(a, &worst);
    J_ADD(o, "health", jstr(agent_health_word(worst)));
    J_ADD(o, "problems", p);
    J_ADD(o, "gc", agent_gc_json(a));
    J_ADD(o, "cgroups", agent_cgroups_status_json(a));
    J_ADD(o, "quotas", agent_quota_status_json(a));
    call->reply = o;
    return 0;
}

/* GET /v1/health: 200 when the host serves as asked (warnings are for
 * people, not for load balancers), 503 with the problems otherwise. */
static int h_health(void *userdata, ApiCall *call) {
    Agent *a = userdata;
    VolumeHealth worst;
    json_object *p = agent_problems(a, &worst);
    bool ready = a->ready && !a->stopping, healthy = worst <= VOLUME_HEALTH_WARNING;
    call->reply = json_object_new_object();
    J_ADD(call->reply, "health", jstr(ready ? agent_health_word(worst) : a->stopping ? "stopping" : "starting"));
    J_ADD(call->reply, "problems", p);
    call->status = healthy && ready ? 200 : 503;
    return 0;
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

/* What a cluster scheduler reads to place workspaces onto hosts: per pool,
 * how many more workspaces really fit. A slot counts only on a volume that
 * takes workspaces now (in service, not degraded, with a workspace's
 * reserve free or growable), and a volume yet to carve only if the host
 * filesystem can hold it beyond its reserve and the indexes refused. */
static int h_capacity(void *userdata, ApiCall *call) {
    Agent *a = userdata;
    const Observation *obs = a->engine->observation;
    const Layout *layout = agent_layout(a);
    StateRecord *record = agent_record(a);
    json_object *pools = json_object_new_array();
    uint64_t host_free_slots = 0;
    for (PoolRole role = 0; role < _POOL_ROLE_MAX; role++) {
        const Pool *p = layout_pool(layout, role);
        if (!p)
            continue;
        json_object *o = json_object_new_object();
        uint64_t size = 0, used = 0, free_bytes = 0, growable = 0, free_slots = 0, workspaces = 0;
        uint64_t quota_sum = 0, quota_room = 0;
        unsigned volumes = 0, accepting = 0;
        for (size_t i = 0; obs && i < obs->n; i++) {
            const VolumeObservation *v = &obs->volumes[i];
            if (v->role != role || !v->declared)
                continue;
            volumes++;
            uint64_t g = agent_capacity_growable(a, v);
            growable += g;
            if (v->has_statvfs) {
                size += v->fs_size;
                used += v->fs_used;
                free_bytes += v->fs_avail;
            }
            if (role != POOL_STATE)
                continue;
            size_t n = state_record_count_workspaces(record, v->name);
            workspaces += n;
            /* The quotas a volume may still promise: quota_overcommit of
             * its size (growth included) less those of its workspaces. */
            uint64_t vq = 0;
            for (size_t k = 0; k < record->n_workspaces; k++)
                if (record->workspaces[k]->active && streq_ptr(record->workspaces[k]->volume, v->name))
                    vq += record->workspaces[k]->quota;
            quota_sum += vq;
            if (v->has_statvfs && agent_quota_volume_enforces(a, v->name)) {
                uint64_t allowed = (uint64_t) ((unsigned __int128) (v->fs_size + g) * p->quota_overcommit / 100);
                quota_room += allowed > vq ? allowed - vq : 0;
            }
            VolumeHealth health = volume_health_from_string(agent_volume_health(a, v, NULL));
            if (capacity_volume_accepts(p, v, health, g) && n < p->workspaces_per_volume) {
                free_slots += p->workspaces_per_volume - n;
                accepting++;
            }
        }
        J_ADD(o, "role", jstr(pool_role_to_string(role)));
        J_ADD(o, "backend", jstr(backend_to_string(p->backend)));
        J_ADD(o, "volumes", json_object_new_int64(volumes));
        J_ADD(o, "size_bytes", json_object_new_uint64(size));
        J_ADD(o, "used_bytes", json_object_new_uint64(used));
        J_ADD(o, "free_bytes", json_object_new_uint64(free_bytes));
        J_ADD(o, "growable_bytes", json_object_new_uint64(growable));
        if (role == POOL_STATE) {
            const char *limit = NULL;
            unsigned refused = refused_state_volumes(a);
            unsigned carvable = capacity_pool_carvable(p, obs, volumes, refused, &limit);
            free_slots += (uint64_t) carvable * p->workspaces_per_volume;
            J_ADD(o, "max_volumes", json_object_new_int64(p->max_volumes));
            J_ADD(o, "volumes_accepting", json_object_new_int64(accepting));
            J_ADD(o, "refused_volumes", json_object_new_int64(refused));
            J_ADD(o, "carvable_volumes", json_object_new_int64(carvable));
            J_ADD(o, "carvable_limit", jstr(limit));
            J_ADD(o, "carvable_bytes", json_object_new_uint64((uint64_t) carvable * p->volume_size));
            J_ADD(o, "workspaces_per_volume", json_object_new_int64(p->workspaces_per_volume));
            J_ADD(o, "workspaces", json_object_new_uint64(workspaces));
            J_ADD(o, "workspace_slots", json_object_new_uint64((uint64_t) p->max_volumes * p->workspaces_per_volume));
            J_ADD(o, "workspace_slots_free", json_object_new_uint64(free_slots));
            J_ADD(o, "quota_overcommit_percent", json_object_new_int64(p->quota_overcommit));
            J_ADD(o, "quota_bytes", json_object_new_uint64(quota_sum));
            J_ADD(o, "quota_bytes_free", json_object_new_uint64(quota_room));
            host_free_slots += free_slots;
        }
        json_object_array_add(pools, o);
    }
    call->reply = json_object_new_object();
    J_ADD(call->reply, "pools", pools);
    J_ADD(call->reply, "workspace_slots_free", json_object_new_uint64(host_free_slots));
    json_object *h = json_object_new_object();
    if (obs && obs->has_backing_free) {
        const Pool *sp = layout_pool(layout, POOL_STATE);
        J_ADD(h, "free_bytes", json_object_new_uint64(obs->backing_free));
        J_ADD(h, "size_bytes", json_object_new_uint64(obs->backing_size));
        J_ADD(h, "promised_bytes", json_object_new_uint64(capacity_host_promised(obs)));
        J_ADD(h, "headroom_bytes", json_object_new_uint64(capacity_host_headroom(obs)));
        J_ADD(h, "carvable_bytes", json_object_new_uint64(capacity_host_carvable(sp, obs)));
    }
    J_ADD(call->reply, "host", h);
    return 0;
}

/* POST /v1/shutdown: the answer goes out first (202), the stop starts on
 * the next loop iteration. */
static int on_shutdown_defer(sd_event_source *s, void *userdata) {
    Agent *a = userdata;
    agent_stop(a, a->shutdown_stop_workspaces, "Shutdown requested through the API");
    /* A floating one-shot source: the loop owns it. */
    return 0;
}

static int h_shutdown(void *userdata, ApiCall *call) {
    Agent *a = userdata;
    if (a->stopping)
        return api_error_set(&call->error, -ESHUTDOWN, 503, "shutting_down", "the agent is stopping already");
    bool stop = call->query && call->query->has_stop_workspaces ? call->query->stop_workspaces
                                                                 : agent_layout(a)->workspace.stop_with_agent;
    int r = sd_event_add_defer(a->event, NULL, on_shutdown_defer, a);
    if (r < 0)
        return r;
    a->shutdown_stop_workspaces = stop;
    call->reply = json_object_new_object();
    J_ADD(call->reply, "stopping", json_object_new_boolean(true));
    J_ADD(call->reply, "workspaces", jstr(stop ? "stop" : "keep"));
    size_t n = a->supervisor ? supervisor_count(a->supervisor) : 0;
    J_ADD(call->reply, "count", json_object_new_int64((int64_t) n));
    return 0;
}

static int h_gc(void *userdata, ApiCall *call) {
    Agent *a = userdata;
    int r = agent_gc_run(a, call->query && call->query->dry_run, call->operation, &call->error);
    return r < 0 ? r : 1;
}

static int h_check(void *userdata, ApiCall *call) {
    Agent *a = userdata;
    int r = agent_check_run(a, call->operation, &call->error);
    return r < 0 ? r : 1;
}

static int op_metrics(void *userdata, MetricsWriter *w, ApiError *err) {
    return agent_metrics(userdata, w);
}

const ApiOps agent_api_ops = {
    .handlers = {
        [API_ROUTE_STATUS] = h_status,
        [API_ROUTE_HEALTH] = h_health,
        [API_ROUTE_VOLUMES] = h_volumes,
        [API_ROUTE_VOLUME] = h_volume,
        [API_ROUTE_WORKSPACES] = h_workspaces,
        [API_ROUTE_WORKSPACE] = h_workspace,
        [API_ROUTE_WORKSPACE_CREATE] = h_create,
        [API_ROUTE_WORKSPACE_DELETE] = h_delete,
        [API_ROUTE_WORKSPACE_RESTART] = h_restart,
        [API_ROUTE_WORKSPACE_QUOTA] = h_quota,
        [API_ROUTE_RELOAD] = h_reload,
        [API_ROUTE_CAPACITY] = h_capacity,
        [API_ROUTE_GC] = h_gc,
        [API_ROUTE_CHECK] = h_check,
        [API_ROUTE_SHUTDOWN] = h_shutdown,
        [API_ROUTE_WORKSPACE_EXPORT] = agent_export_handler,
    },
    .metrics = op_metrics,
};

static void api_log(void *userdata, int priority, const char *message) {
    log_internal(priority, 0, "api: %s", message);
}

void agent_api_layout_changed(Agent *a, const ApiConfig *old) {
    const ApiConfig *c = &agent_layout(a)->api;
    if (!a->api || !a->socket_path)
        return;
    if (!streq_ptr(old->socket_group, c->socket_group) || old->socket_mode != c->socket_mode) {
        gid_t gid;
        int r = api_socket_set_access(a->socket_path, c->socket_group, c->socket_mode, &gid);
        if (r < 0)
            log_error_errno(r, "Reload: cannot give the API socket %s mode %04o and group %s, keeping what it has: %m",
                            a->socket_path, (unsigned) c->socket_mode, c->socket_group ?: "root");
        else {
            api_set_group(a->api, gid);
            log_info("Reload: the API socket %s now has mode %04o, changes for root%s%s%s", a->socket_path,
                     (unsigned) c->socket_mode, gid != GID_INVALID ? " and group " : " only",
                     gid != GID_INVALID ? c->socket_group : "",
                     c->socket_group && gid == GID_INVALID ? " (the group does not exist)" : "");
        }
    }
    /* What a running server cannot change: said, never pretended. */
    if (!a->options.socket && !streq_ptr(old->socket_path, c->socket_path))
        log_notice("Reload: api.socket changed to %s; the agent keeps serving %s until its next start",
                   c->socket_path, a->socket_path);
    if (old->max_connections != c->max_connections || old->max_body != c->max_body ||
        old->request_timeout != c->request_timeout)
        log_notice("Reload: api.max_connections, max_body and request_timeout take effect at the next start");
}

/* A socket file goes with the agent, but only if it is still the one it
 * bound (never a socket someone else made there since). */
static void remove_own_socket(const char *path, ino_t ino) {
    struct stat st;
    if (path && ino && lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == ino)
        (void) unlink(path);
}

static ino_t socket_ino(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? st.st_ino : 0;
}

void agent_api_stop(Agent *a) {
    a->api = api_free(a->api);
    remove_own_socket(a->socket_path, a->socket_ino);
    remove_own_socket(a->readonly_socket_path, a->readonly_socket_ino);
    a->socket_ino = a->readonly_socket_ino = 0;
}

/* api.readonly_socket: reads only, whoever connects (monitoring). */
static int agent_api_start_readonly(Agent *a, const ApiConfig *c, const char *main_path) {
    const char *path = c->readonly_socket_path;
    int fd = -EBADF, r;
    if (!path)
        return 0;
    if (streq(path, main_path))
        return log_error_errno(EINVAL, "api.readonly_socket is the API socket %s itself: give it another path", path);
    _cleanup_free_ char *dir = strdup(path);
    if (!dir)
        return log_oom();
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        r = mkdir_p(dir, 0755);
        if (r < 0)
            return log_error_errno(r, "Failed to create %s: %m", dir);
    }
    /* No group: the mode alone says who may connect, and what they may
     * do there is read. */
    r = api_socket_open(path, NULL, c->readonly_socket_mode, &fd, NULL);
    if (r < 0)
        return log_error_errno(r, "Failed to open the read-only API socket %s: %m", path);
    ino_t ino = socket_ino(path);
    r = api_add_readonly_socket(a->api, fd);
    if (r < 0)
        return log_error_errno(r, "Failed to serve the read-only API socket %s: %m", path);
    free(a->readonly_socket_path);
    a->readonly_socket_path = strdup(path);
    a->readonly_socket_ino = ino;
    log_info("API listening read-only on %s (mode %04o)", path, (unsigned) c->readonly_socket_mode);
    return 0;
}

int agent_api_start(Agent *a) {
    const ApiConfig *c = &agent_layout(a)->api;
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
    /* Socket activation (layoutd.socket): systemd holds the socket while
     * the agent restarts, so clients wait instead of being refused. */
    bool activated = false;
    r = api_socket_from_systemd(path, c->socket_group, c->socket_mode, &fd, &gid);
    if (r == -EADDRNOTAVAIL)
        log_warning("systemd passed sockets, none of them listening on %s: binding it here", path);
    else if (r < 0)
        return log_error_errno(r, "Failed to take the API socket %s from systemd: %m", path);
    activated = r > 0;
    if (!activated)
        r = api_socket_open(path, c->socket_group, c->socket_mode, &fd, &gid);
    if (r < 0)
        return log_error_errno(r, "Failed to open the API socket %s: %m", path);
    if (c->socket_group && gid == GID_INVALID)
        log_notice("Group '%s' does not exist: the API socket stays root-only for changes", c->socket_group);
    ApiServerConfig sc = {
        .max_body = c->max_body,
        .connection_limit = c->max_connections,
        .request_timeout_sec = (unsigned) ((c->request_timeout + USEC_PER_SEC - 1) / USEC_PER_SEC) /* whole seconds, rounded up */,
        .group = gid,
        .log = api_log,
    };
    r = api_new(a->event, fd, &sc, &agent_api_ops, a, &a->api);
    if (r < 0)
        return log_error_errno(r, "Failed to start the API on %s: %m", path);
    a->socket_path = strdup(path);
    /* A socket systemd passed is systemd's: it stays when the agent goes
     * (the next one is started on it), so it is never removed here. */
    a->socket_ino = activated ? 0 : socket_ino(path);
    api_set_state(a->api, API_STATE_STARTING);
    log_info("API listening on %s%s", path, activated ? " (the socket systemd passed)" : "");
    return agent_api_start_readonly(a, c, path);
}
