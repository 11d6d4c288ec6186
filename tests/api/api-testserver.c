/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * api-testserver: the status API on a Unix socket, driven by an sd-event
 * loop exactly as the agent drives it, over a FAKE in-memory engine (a
 * test double implementing ApiOps: a few volumes, workspaces that
 * POST/DELETE really add and remove). It tests the HTTP layer, and is the
 * server the layoutctl client tests and the API benchmark talk to. It
 * touches no device.
 *
 *   api-testserver --socket PATH [--mode 0666] [--group NAME]
 *       [--workspaces N] [--slots-per-volume N] [--max-body BYTES]
 *       [--connection-limit N] [--idle-timeout SEC] [--request-timeout SEC]
 *       [--state starting|ready|stopping] [--ready-after MS]
 *       [--health ok|warning|degraded] [--label VALUE]
 *
 * Prints "READY <connection-limit>" on stdout once it serves; stops on
 * SIGTERM/SIGINT.
 */

#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "api.h"
#include "util.h"

typedef struct FakeVolume {
    const char *name;
    const char *role;
    const char *backend;
    const char *fs_type;
    const char *device;
    uint64_t size;
    uint64_t used_base;
    unsigned n_workspaces;
    double probe_sum;
    uint64_t probe_counts[4];
} FakeVolume;

typedef struct FakeWorkspace {
    char *id;
    char *tenant;
    uint64_t quota;
    json_object *labels;
    FakeVolume *volume;
    pid_t pid;
    unsigned restarts;
    time_t created_at;
} FakeWorkspace;

typedef struct FakeEngine {
    FakeVolume volumes[3];
    FakeWorkspace **workspaces;
    size_t n_workspaces;
    unsigned slots_per_volume;
    unsigned reloads;
    pid_t next_pid;
    usec_t started;
    sd_event *event;
    const char *health;          /* --health: what status and health say */
    Api *api;
} FakeEngine;

static const double probe_bounds[] = { 0.001, 0.01, 0.1 };

static bool fake_is_state(const FakeVolume *v) {
    return streq(v->role, "state");
}

static FakeWorkspace *fake_find(FakeEngine *e, const char *id, size_t *ret_index) {
    for (size_t i = 0; i < e->n_workspaces; i++)
        if (streq(e->workspaces[i]->id, id)) {
            if (ret_index)
                *ret_index = i;
            return e->workspaces[i];
        }
    return NULL;
}

static FakeVolume *fake_volume(FakeEngine *e, const char *name) {
    for (size_t i = 0; i < ELEMENTSOF(e->volumes); i++)
        if (streq(e->volumes[i].name, name))
            return &e->volumes[i];
    return NULL;
}

static json_object *volume_json(FakeEngine *e, FakeVolume *v) {
    json_object *o = json_object_new_object(), *ws = json_object_new_array();
    uint64_t used = v->used_base;
    for (size_t i = 0; i < e->n_workspaces; i++)
        if (e->workspaces[i]->volume == v) {
            json_object_array_add(ws, json_object_new_string(e->workspaces[i]->id));
            used += 16 * MIB;
        }
    if (!fake_is_state(v))
        used += e->n_workspaces * 4 * MIB;
    json_object_object_add(o, "name", json_object_new_string(v->name));
    json_object_object_add(o, "role", json_object_new_string(v->role));
    json_object_object_add(o, "backend", json_object_new_string(v->backend));
    json_object_object_add(o, "fs_type", json_object_new_string(v->fs_type));
    json_object_object_add(o, "device", json_object_new_string(v->device));
    json_object_object_add(o, "direct_io", json_object_new_boolean(true));
    char mp[128];
    snprintf(mp, sizeof(mp), "/var/lib/layoutd/volumes/%s", v->name);
    json_object_object_add(o, "mountpoint", json_object_new_string(mp));
    json_object_object_add(o, "size_bytes", json_object_new_uint64(v->size));
    json_object_object_add(o, "used_bytes", json_object_new_uint64(used));
    json_object_object_add(o, "free_bytes", json_object_new_uint64(v->size - MIN(used, v->size)));
    json_object_object_add(o, "flush_scope", json_object_new_int((int) json_object_array_length(ws)));
    json_object_object_add(o, "workspaces", ws);
    json_object_object_add(o, "health", json_object_new_string("ok"));
    return o;
}

static json_object *workspace_json(FakeEngine *e, FakeWorkspace *w) {
    json_object *o = json_object_new_object(), *d = json_object_new_object();
    char buf[256];
    json_object_object_add(o, "id", json_object_new_string(w->id));
    json_object_object_add(o, "tenant", w->tenant ? json_object_new_string(w->tenant) : NULL);
    json_object_object_add(o, "quota_bytes", json_object_new_uint64(w->quota));
    json_object_object_add(o, "labels", w->labels ? json_object_get(w->labels) : json_object_new_object());
    json_object_object_add(o, "volume", json_object_new_string(w->volume->name));
    snprintf(buf, sizeof(buf), "/var/lib/layoutd/volumes/%s/workspaces/%s", w->volume->name, w->id);
    json_object_object_add(o, "state_dir", json_object_new_string(buf));
    snprintf(buf, sizeof(buf), "/var/lib/layoutd/workspaces/%s", w->id);
    json_object_object_add(o, "mountpoint", json_object_new_string(buf));
    json_object_object_add(o, "flush_scope", json_object_new_int((int) w->volume->n_workspaces));
    json_object_object_add(d, "state", json_object_new_string("running"));
    json_object_object_add(d, "pid", json_object_new_int(w->pid));
    json_object_object_add(d, "restarts", json_object_new_int((int) w->restarts));
    json_object_object_add(o, "daemon", d);
    json_object_object_add(o, "created_at", json_object_new_int64(w->created_at));
    /* What the real agent's answers carry too: a float with many digits,
     * arrays of strings (one empty). */
    json_object_object_add(d, "ready_latency_sec", json_object_new_double(0.044163000000000001));
    json_object *notes = json_object_new_array();
    json_object_array_add(notes, json_object_new_string("first"));
    json_object_array_add(notes, json_object_new_string("second"));
    json_object_object_add(o, "notes", notes);
    json_object_object_add(o, "shards", json_object_new_array());
    return o;
}

static int fake_status(void *ud, ApiCall *call) {
    FakeEngine *e = ud;
    json_object *o = json_object_new_object(), *l = json_object_new_object(),
                *v = json_object_new_object(), *w = json_object_new_object();
    json_object_object_add(o, "version", json_object_new_string(LAYOUTD_VERSION));
    json_object_object_add(o, "state", json_object_new_string(api_state_to_string(api_get_state(e->api))));
    json_object_object_add(o, "health", json_object_new_string(e->health));
    json_object_object_add(o, "pid", json_object_new_int(getpid()));
    json_object_object_add(o, "uptime_sec", json_object_new_uint64((now_usec(CLOCK_MONOTONIC) - e->started) / USEC_PER_SEC));
    json_object_object_add(l, "path", json_object_new_string("/etc/layoutd/layouts.d/default.yaml"));
    json_object_object_add(l, "hash", json_object_new_string("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"));
    json_object_object_add(o, "layout", l);
    json_object_object_add(v, "total", json_object_new_int((int) ELEMENTSOF(e->volumes)));
    json_object_object_add(v, "ok", json_object_new_int((int) ELEMENTSOF(e->volumes)));
    json_object_object_add(v, "up", json_object_new_int((int) ELEMENTSOF(e->volumes)));
    json_object_object_add(v, "warning", json_object_new_int(0));
    json_object_object_add(v, "degraded", json_object_new_int(0));
    json_object_object_add(v, "failed", json_object_new_int(0));
    json_object_object_add(o, "volumes", v);
    json_object_object_add(w, "total", json_object_new_int((int) e->n_workspaces));
    json_object_object_add(w, "running", json_object_new_int((int) e->n_workspaces));
    json_object_object_add(w, "failed", json_object_new_int(0));
    json_object_object_add(o, "workspaces", w);
    json_object_object_add(o, "problems", json_object_new_array());
    call->reply = o;
    return 0;
}

/* GET /v1/health as the agent answers it: 200 when ready and nothing is
 * worse than a warning, 503 otherwise. */
static int fake_health(void *ud, ApiCall *call) {
    FakeEngine *e = ud;
    ApiState st = api_get_state(e->api);
    bool healthy = st == API_STATE_READY && (streq(e->health, "ok") || streq(e->health, "warning"));
    call->reply = json_object_new_object();
    json_object_object_add(call->reply, "health",
                           json_object_new_string(st == API_STATE_READY ? e->health : api_state_to_string(st)));
    json_object_object_add(call->reply, "problems", json_object_new_array());
    call->status = healthy ? 200 : 503;
    return 0;
}

static int fake_list_volumes(void *ud, ApiCall *call) {
    FakeEngine *e = ud;
    json_object *o = json_object_new_object(), *a = json_object_new_array();
    for (size_t i = 0; i < ELEMENTSOF(e->volumes); i++)
        json_object_array_add(a, volume_json(e, &e->volumes[i]));
    json_object_object_add(o, "volumes", a);
    call->reply = o;
    return 0;
}

static int fake_get_volume(void *ud, ApiCall *call) {
    FakeEngine *e = ud;
    FakeVolume *v = fake_volume(e, call->param);
    if (!v)
        return -ENOENT;
    call->reply = volume_json(e, v);
    return 0;
}

static int fake_list_workspaces(void *ud, ApiCall *call) {
    FakeEngine *e = ud;
    json_object *o = json_object_new_object(), *a = json_object_new_array();
    for (size_t i = 0; i < e->n_workspaces; i++)
        json_object_array_add(a, workspace_json(e, e->workspaces[i]));
    json_object_object_add(o, "workspaces", a);
    call->reply = o;
    return 0;
}

static int fake_get_workspace(void *ud, ApiCall *call) {
    FakeEngine *e = ud;
    FakeWorkspace *w = fake_find(e, call->param, NULL);
    if (!w)
        return -ENOENT;
    call->reply = workspace_json(e, w);
    return 0;
}

static int fake_add(FakeEngine *e, const char *id, const char *tenant, uint64_t quota, json_object *labels,
                    FakeWorkspace **ret, ApiError *err) {
    if (fake_find(e, id, NULL))
        return -EEXIST;
    /* Spread: the least loaded state volume with a free slot. */
    FakeVolume *best = NULL;
    for (size_t i = 0; i < ELEMENTSOF(e->volumes); i++) {
        FakeVolume *v = &e->volumes[i];
        if (fake_is_state(v) && v->n_workspaces < e->slots_per_volume && (!best || v->n_workspaces < best->n_workspaces))
            best = v;
    }
    if (!best)
        return api_fail(err, -ENOSPC, API_CODE_POOL_FULL,
                        "Every state volume holds %u workspaces (the flush-scope bound)", e->slots_per_volume);
    FakeWorkspace *w = calloc(1, sizeof(*w));
    FakeWorkspace **a = realloc(e->workspaces, (e->n_workspaces + 1) * sizeof(*a));
    if (!w || !a) {
        free(w);
        if (a)
            e->workspaces = a;
        return -ENOMEM;
    }
    e->workspaces = a;
    w->id = strdup(id);
    w->tenant = tenant ? strdup(tenant) : NULL;
    w->quota = quota;
    w->labels = labels ? json_object_get(labels) : NULL;
    w->volume = best;
    w->pid = e->next_pid++;
    w->created_at = time(NULL);
    best->n_workspaces++;
    e->workspaces[e->n_workspaces++] = w;
    if (ret)
        *ret = w;
    return 0;
}

static int fake_create_workspace(void *ud, ApiCall *call) {
    FakeEngine *e = ud;
    FakeWorkspace *w;
    const ApiWorkspaceRequest *req = call->workspace;
    int r = fake_add(e, req->id, req->tenant, req->quota, req->labels, &w, &call->error);
    if (r < 0)
        return r;
    call->reply = workspace_json(e, w);
    return 0;
}

static int fake_delete_workspace(void *ud, ApiCall *call) {
    FakeEngine *e = ud;
    const char *id = call->param;
    bool destroy_data = call->query->destroy_data;
    size_t i;
    FakeWorkspace *w = fake_find(e, id, &i);
    if (!w)
        return -ENOENT;
    w->volume->n_workspaces--;
    memmove(e->workspaces + i, e->workspaces + i + 1, (e->n_workspaces - i - 1) * sizeof(*e->workspaces));
    e->n_workspaces--;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", json_object_new_string(id));
    json_object_object_add(o, "removed", json_object_new_boolean(true));
    json_object_object_add(o, "data_destroyed", json_object_new_boolean(destroy_data));
    free(w->id);
    free(w->tenant);
    json_object_put(w->labels);
    free(w);
    call->reply = o;
    return 0;
}

/* The fake daemon is "back" a moment after a restart: the operation ends
 * then, as the agent's does when the daemon's mount appears. */
typedef struct RestartJob {
    FakeEngine *engine;
    ApiOperation *op;
    char *id;
} RestartJob;

static int on_restart_done(sd_event_source *s, uint64_t usec, void *userdata) {
    RestartJob *j = userdata;
    FakeWorkspace *w = fake_find(j->engine, j->id, NULL);
    api_operation_step_done(j->op, 0, 0, "pid %d", w ? (int) w->pid : 0);
    api_operation_succeed(j->op, 200, w ? workspace_json(j->engine, w) : NULL);
    api_operation_unref(j->op);
    free(j->id);
    free(j);
    sd_event_source_disable_unref(s);
    return 0;
}

static int fake_restart_workspace(void *ud, ApiCall *call) {
    FakeEngine *e = ud;
    const char *id = call->param;
    FakeWorkspace *w = fake_find(e, id, NULL);
    if (!w)
        return -ENOENT;
    w->restarts++;
    w->pid = e->next_pid++;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", json_object_new_string(id));
    json_object_object_add(o, "restarting", json_object_new_boolean(true));
    call->reply = o;
    RestartJob *j = calloc(1, sizeof(*j));
    if (!j || !(j->id = strdup(id))) {
        free(j);
        return -ENOMEM;
    }
    j->engine = e;
    j->op = api_operation_ref(call->operation);
    (void) api_operation_step(call->operation, "restarting the FUSE daemon");
    if (sd_event_add_time_relative(e->event, NULL, CLOCK_MONOTONIC, 100 * USEC_PER_MSEC, 0, on_restart_done, j) < 0)
        return -ENOMEM;
    return 1;
}

static int fake_reload(void *ud, ApiCall *call) {
    FakeEngine *e = ud;
    e->reloads++;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "reloaded", json_object_new_boolean(true));
    json_object_object_add(o, "changed", json_object_new_boolean(false));
    json_object_object_add(o, "layout_hash", json_object_new_string("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"));
    call->reply = o;
    return 0;
}

static int fake_capacity(void *ud, ApiCall *call) {
    FakeEngine *e = ud;
    json_object *o = json_object_new_object(), *pools = json_object_new_array();
    unsigned free_total = 0;
    for (int pass = 0; pass < 2; pass++) {
        const char *role = pass == 0 ? "state" : "content";
        uint64_t size = 0, used = 0;
        unsigned nvol = 0, slots = 0, ws = 0;
        for (size_t i = 0; i < ELEMENTSOF(e->volumes); i++) {
            FakeVolume *v = &e->volumes[i];
            if (!streq(v->role, role))
                continue;
            nvol++;
            size += v->size;
            used += v->used_base + (fake_is_state(v) ? v->n_workspaces * 16 * MIB : e->n_workspaces * 4 * MIB);
            if (fake_is_state(v)) {
                slots += e->slots_per_volume;
                ws += v->n_workspaces;
            }
        }
        json_object *p = json_object_new_object();
        json_object_object_add(p, "role", json_object_new_string(role));
        json_object_object_add(p, "volumes", json_object_new_int((int) nvol));
        json_object_object_add(p, "size_bytes", json_object_new_uint64(size));
        json_object_object_add(p, "used_bytes", json_object_new_uint64(used));
        json_object_object_add(p, "free_bytes", json_object_new_uint64(size - MIN(size, used)));
        if (pass == 0) {
            json_object_object_add(p, "workspaces", json_object_new_int((int) ws));
            json_object_object_add(p, "workspace_slots", json_object_new_int((int) slots));
            json_object_object_add(p, "workspace_slots_free", json_object_new_int((int) (slots - ws)));
            free_total = slots - ws;
        }
        json_object_array_add(pools, p);
    }
    json_object_object_add(o, "pools", pools);
    json_object_object_add(o, "workspace_slots_free", json_object_new_int((int) free_total));
    call->reply = o;
    return 0;
}

static int fake_metrics(void *ud, MetricsWriter *w, ApiError *err) {
    FakeEngine *e = ud;
    int r;

    r = metrics_writer_family(w, "layoutd_volume_size_bytes", METRIC_GAUGE, "Size of the volume's filesystem.");
    for (size_t i = 0; r >= 0 && i < ELEMENTSOF(e->volumes); i++)
        r = metrics_writer_sample(w, (const char *[]) { "volume", e->volumes[i].name, "role", e->volumes[i].role, NULL },
                                  (double) e->volumes[i].size);
    if (r >= 0)
        r = metrics_writer_family(w, "layoutd_volume_workspaces", METRIC_GAUGE,
                                  "Workspaces placed on the volume (its flush scope).");
    for (size_t i = 0; r >= 0 && i < ELEMENTSOF(e->volumes); i++)
        r = metrics_writer_sample(w, (const char *[]) { "volume", e->volumes[i].name, NULL }, e->volumes[i].n_workspaces);
    if (r >= 0)
        r = metrics_writer_family(w, "layoutd_volume_direct_io", METRIC_GAUGE,
                                  "1 if the loop device is in direct-I/O mode (read back from the kernel).");
    for (size_t i = 0; r >= 0 && i < ELEMENTSOF(e->volumes); i++)
        r = metrics_writer_sample(w, (const char *[]) { "volume", e->volumes[i].name, NULL }, 1);
    if (r >= 0)
        r = metrics_writer_family(w, "layoutd_volume_flush_probe_seconds", METRIC_HISTOGRAM,
                                  "Latency of a 4 KiB write+fsync probe on the volume.");
    for (size_t i = 0; r >= 0 && i < ELEMENTSOF(e->volumes); i++)
        r = metrics_writer_histogram(w, (const char *[]) { "volume", e->volumes[i].name, NULL }, probe_bounds,
                                     e->volumes[i].probe_counts, ELEMENTSOF(probe_bounds), e->volumes[i].probe_counts[3],
                                     e->volumes[i].probe_sum);
    if (r >= 0)
        r = metrics_writer_family(w, "layoutd_workspace_daemon_restarts_total", METRIC_COUNTER,
                                  "Restarts of the workspace's FUSE daemon.");
    for (size_t i = 0; r >= 0 && i < e->n_workspaces; i++)
        r = metrics_writer_sample(w, (const char *[]) { "workspace", e->workspaces[i]->id,
                                                        "tenant", e->workspaces[i]->tenant ?: "", NULL },
                                  e->workspaces[i]->restarts);
    if (r >= 0)
        r = metrics_writer_family(w, "layoutd_workspaces", METRIC_GAUGE, "Workspaces by daemon state.");
    if (r >= 0)
        r = metrics_writer_sample(w, (const char *[]) { "state", "running", NULL }, (double) e->n_workspaces);
    if (r >= 0)
        r = metrics_writer_family(w, "layoutd_reloads_total", METRIC_COUNTER, "Layout reloads.");
    if (r >= 0)
        r = metrics_writer_sample(w, NULL, e->reloads);
    return r;
}

static const ApiOps fake_ops = {
    .handlers = {
        [API_ROUTE_STATUS] = fake_status,
        [API_ROUTE_HEALTH] = fake_health,
        [API_ROUTE_VOLUMES] = fake_list_volumes,
        [API_ROUTE_VOLUME] = fake_get_volume,
        [API_ROUTE_WORKSPACES] = fake_list_workspaces,
        [API_ROUTE_WORKSPACE] = fake_get_workspace,
        [API_ROUTE_WORKSPACE_CREATE] = fake_create_workspace,
        [API_ROUTE_WORKSPACE_DELETE] = fake_delete_workspace,
        [API_ROUTE_WORKSPACE_RESTART] = fake_restart_workspace,
        [API_ROUTE_RELOAD] = fake_reload,
        [API_ROUTE_CAPACITY] = fake_capacity,
    },
    .metrics = fake_metrics,
};

static void log_stderr(void *ud, int prio, const char *msg) {
    fprintf(stderr, "api-testserver: <%d> %s\n", prio, msg);
}

static int on_ready_timer(sd_event_source *s, uint64_t usec, void *ud) {
    /* As agent_ready(): the state first, then the event that says so. */
    api_set_state(ud, API_STATE_READY);
    (void) api_event_emit(ud, "agent.ready", NULL);
    return 0;
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *ud) {
    return sd_event_exit(sd_event_source_get_event(s), 0);
}

int main(int argc, char *argv[]) {
    static const struct option opts[] = {
        { "socket", required_argument, NULL, 's' },
        { "mode", required_argument, NULL, 'm' },
        { "group", required_argument, NULL, 'g' },
        { "workspaces", required_argument, NULL, 'w' },
        { "slots-per-volume", required_argument, NULL, 'S' },
        { "max-body", required_argument, NULL, 'b' },
        { "connection-limit", required_argument, NULL, 'c' },
        { "idle-timeout", required_argument, NULL, 'i' },
        { "request-timeout", required_argument, NULL, 't' },
        { "state", required_argument, NULL, 'x' },
        { "ready-after", required_argument, NULL, 'R' },
        { "health", required_argument, NULL, 'H' },
        { "label", required_argument, NULL, 'L' },
        { "quiet", no_argument, NULL, 'q' },
        {}
    };
    const char *socket_path = NULL, *group = API_GROUP_DEFAULT;
    mode_t mode = 0660;
    unsigned n_ws = 3, slots = 8;
    ApiState state = API_STATE_READY;
    unsigned ready_after_ms = 0;
    const char *health = "ok", *extra_label = NULL;
    bool quiet = false;
    ApiServerConfig cf = { .log = log_stderr };
    int c, r;

    while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0) {
        switch (c) {
        case 's': socket_path = optarg; break;
        case 'm': mode = (mode_t) strtoul(optarg, NULL, 8); break;
        case 'g': group = optarg; break;
        case 'w': n_ws = (unsigned) strtoul(optarg, NULL, 10); break;
        case 'S': slots = (unsigned) strtoul(optarg, NULL, 10); break;
        case 'b': cf.max_body = strtoull(optarg, NULL, 10); break;
        case 'c': cf.connection_limit = (unsigned) strtoul(optarg, NULL, 10); break;
        case 'i': cf.idle_timeout_sec = (unsigned) strtoul(optarg, NULL, 10); break;
        case 't': cf.request_timeout_sec = (unsigned) strtoul(optarg, NULL, 10); break;
        case 'x':
            state = api_state_from_string(optarg);
            if (state < 0) {
                fprintf(stderr, "bad --state\n");
                return 2;
            }
            break;
        case 'R': ready_after_ms = (unsigned) strtoul(optarg, NULL, 10); break;
        case 'H': health = optarg; break;
        case 'L': extra_label = optarg; break;
        case 'q': quiet = true; break;
        default: return 2;
        }
    }
    if (!socket_path) {
        fprintf(stderr, "usage: api-testserver --socket PATH [options]\n");
        return 2;
    }
    if (quiet)
        cf.log = NULL;

    FakeEngine e = {
        .volumes = {
            { "state-0", "state", "loop-ext4", "ext4", "/dev/loop10", 8 * GIB, 200 * MIB },
            { "state-1", "state", "loop-ext4", "ext4", "/dev/loop11", 8 * GIB, 200 * MIB },
            { "content-0", "content", "loop-xfs", "xfs", "/dev/loop12", 32 * GIB, 1 * GIB },
        },
        .next_pid = 40000,
        .started = now_usec(CLOCK_MONOTONIC),
        .health = health,
    };
    /* Room for the requested workspaces plus a few, so creates succeed. */
    e.slots_per_volume = MAX(slots, (n_ws + 1) / 2);
    for (size_t i = 0; i < ELEMENTSOF(e.volumes); i++) {
        e.volumes[i].probe_counts[0] = 10 + i;
        e.volumes[i].probe_counts[1] = 3;
        e.volumes[i].probe_counts[3] = 1;
        e.volumes[i].probe_sum = 0.75;
    }
    for (unsigned i = 0; i < n_ws; i++) {
        char id[32];
        snprintf(id, sizeof(id), "ws-%u", i);
        json_object *labels = json_object_new_object();
        json_object_object_add(labels, "team", json_object_new_string(i % 2 ? "red" : "blue"));
        /* --label: a value as a hostile client could set it (escaping tests). */
        if (extra_label && i == 0)
            json_object_object_add(labels, "note", json_object_new_string(extra_label));
        r = fake_add(&e, id, i % 2 ? "acme" : NULL, i % 3 ? 2 * GIB : 0, labels, NULL, NULL);
        json_object_put(labels);
        if (r < 0) {
            fprintf(stderr, "fake_add: %s\n", strerror(-r));
            return 1;
        }
    }

    sigset_t ss;
    sigemptyset(&ss);
    sigaddset(&ss, SIGTERM);
    sigaddset(&ss, SIGINT);
    sigprocmask(SIG_BLOCK, &ss, NULL);

    sd_event *event = NULL;
    r = sd_event_default(&event);
    e.event = event;
    if (r < 0) {
        fprintf(stderr, "sd_event_default: %s\n", strerror(-r));
        return 1;
    }
    (void) sd_event_add_signal(event, NULL, SIGTERM, on_signal, NULL);
    (void) sd_event_add_signal(event, NULL, SIGINT, on_signal, NULL);

    int fd = -EBADF;
    gid_t gid;
    r = api_socket_open(socket_path, group, mode, &fd, &gid);
    if (r < 0) {
        fprintf(stderr, "api_socket_open(%s): %s\n", socket_path, strerror(-r));
        return 1;
    }
    if (gid == GID_INVALID && group)
        fprintf(stderr, "api-testserver: group '%s' does not exist: changes allowed to root only\n", group);
    cf.group = gid;

    Api *api = NULL;
    r = api_new(event, fd, &cf, &fake_ops, &e, &api);
    if (r < 0) {
        fprintf(stderr, "api_new: %s\n", strerror(-r));
        return 1;
    }
    e.api = api;
    api_set_state(api, state);
    /* --ready-after MS: starting, then ready, as the agent is once its
     * volumes are up. */
    if (ready_after_ms > 0) {
        api_set_state(api, API_STATE_STARTING);
        (void) sd_event_add_time_relative(event, NULL, CLOCK_MONOTONIC, ready_after_ms * USEC_PER_MSEC, 0,
                                          on_ready_timer, api);
    }
    printf("READY %u\n", api_get_connection_limit(api));
    fflush(stdout);

    r = sd_event_loop(event);
    api_free(api);
    (void) unlink(socket_path);
    sd_event_unref(event);
    for (size_t i = 0; i < e.n_workspaces; i++) {
        free(e.workspaces[i]->id);
        free(e.workspaces[i]->tenant);
        json_object_put(e.workspaces[i]->labels);
        free(e.workspaces[i]);
    }
    free(e.workspaces);
    return r < 0 ? 1 : 0;
}
