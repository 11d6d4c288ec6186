/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The agent's handlers for the status API (one per route, the table at the
 * end) and its metrics. Reads are answered from the cached observation,
 * the record and the supervisor: no handler touches a device or blocks.
 * The shapes are the contract in docs/api.md.
 */
#include <grp.h>
#include <inttypes.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json-util.h"
#include "agent.h"
#include "log.h"
#include "place-workspaces.h"
#include "util.h"
#include "volume-report.h"

#define J_ADD(o, k, v) json_object_object_add((o), (k), (v))
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
        return api_fail(&call->error, -ENOENT, API_CODE_NOT_FOUND, "no volume named '%s'", call->param);
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
        return api_fail(&call->error, -ENOENT, API_CODE_NOT_FOUND, "no workspace '%s'", call->param);
    call->reply = agent_workspace_json(a, w);
    return 0;
}

static int h_placement(void *userdata, ApiCall *call) {
    const char *tenant = call->query && call->query->tenant[0] ? call->query->tenant : NULL;
    return agent_workspace_placement(userdata, call->param, tenant, &call->reply);
}

static int h_create(void *userdata, ApiCall *call) {
    Agent *a = userdata;
    int r = agent_workspace_create(a, call->workspace, call->query && call->query->queue, call->operation,
                                   &call->error);
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
    J_ADD(call->reply, "id", json_string_or_null(call->param));
    J_ADD(call->reply, "removed", json_object_new_boolean(true));
    J_ADD(call->reply, "data_destroyed", json_object_new_boolean(call->query->destroy_data));
    J_ADD(call->reply, "state", json_string_or_null("stopping"));
    return 1;
}

static int h_restart(void *userdata, ApiCall *call) {
    Agent *a = userdata;
    int r = agent_workspace_restart(a, call->param, call->query && call->query->queue, call->operation,
                                    &call->error);
    if (r < 0)
        return r;
    call->reply = json_object_new_object();
    J_ADD(call->reply, "id", json_string_or_null(call->param));
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
        return api_fail(&call->error, r, API_CODE_INVALID_LAYOUT, "%s", error ?: "invalid layout");
    return 1;
}

static int h_status(void *userdata, ApiCall *call) {
    call->reply = agent_status_json(userdata);
    return call->reply ? 0 : -ENOMEM;
}

/* GET /v1/health: 200 when the host serves as asked, 503 otherwise. */
static int h_health(void *userdata, ApiCall *call) {
    call->reply = agent_health_json(userdata, &call->status);
    return call->reply ? 0 : -ENOMEM;
}

static int h_capacity(void *userdata, ApiCall *call) {
    call->reply = agent_capacity_json(userdata);
    return call->reply ? 0 : -ENOMEM;
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
        return api_fail(&call->error, -ESHUTDOWN, API_CODE_SHUTTING_DOWN, "the agent is stopping already");
    bool stop = call->query && call->query->has_stop_workspaces ? call->query->stop_workspaces
                                                                 : agent_layout(a)->workspace.stop_with_agent;
    int r = sd_event_add_defer(a->event, NULL, on_shutdown_defer, a);
    if (r < 0)
        return r;
    a->shutdown_stop_workspaces = stop;
    call->reply = json_object_new_object();
    J_ADD(call->reply, "stopping", json_object_new_boolean(true));
    J_ADD(call->reply, "workspaces", json_string_or_null(stop ? "stop" : "keep"));
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
        [API_ROUTE_WORKSPACE_PLACEMENT] = h_placement,
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

/* api.metrics_listen: GET /metrics over TCP, for Prometheus. A port that
 * cannot be had is logged and the agent runs on without it: the figures
 * are an extra, the storage is the job. */
static void agent_api_start_metrics(Agent *a, const ApiConfig *c) {
    struct sockaddr_storage ss;
    socklen_t len;
    if (!c->metrics_listen)
        return;
    if (layout_parse_listen(c->metrics_listen, &ss, &len) < 0) {
        log_error("api.metrics_listen '%s' is not an address; not listening", c->metrics_listen);
        return;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        log_error_errno(errno, "Failed to open the metrics listener %s, ignoring: %m", c->metrics_listen);
        return;
    }
    int one = 1;
    (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *) &ss, len) < 0 || listen(fd, SOMAXCONN) < 0) {
        log_error_errno(errno, "Failed to listen on %s for /metrics (api.metrics_listen), ignoring: %m",
                        c->metrics_listen);
        close(fd);
        return;
    }
    int r = api_add_metrics_listener(a->api, fd);
    if (r < 0) {
        log_error_errno(r, "Failed to serve /metrics on %s, ignoring: %m", c->metrics_listen);
        return;
    }
    log_info("API serving GET /metrics on %s (api.metrics_listen)", c->metrics_listen);
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
    r = agent_api_start_readonly(a, c, path);
    if (r < 0)
        return r;
    agent_api_start_metrics(a, c);
    return 0;
}
