/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A cgroup per workspace daemon (src/cgroup): each daemon is put into its
 * own systemd scope with the layout's workspace.resources limits as soon
 * as it runs (a new one, or one re-adopted after an agent restart that is
 * not in its scope yet), and its figures (CPU, memory, I/O, tasks,
 * pressure) are read every 10 s for /v1/workspaces and /metrics. Where
 * there is no systemd or no unified hierarchy, the agent says so once and
 * the daemons run in its own cgroup.
 */
#include <inttypes.h>
#include <stdio.h>

#include "agent.h"
#include "log.h"
#include "util.h"

#define STATS_INTERVAL (10 * USEC_PER_SEC)

typedef struct WsCgroup {
    char *id;
    char *unit;
    pid_t placed_pid;            /* the daemon last placed (or being placed) */
    bool placing;
    char *error;                 /* why placing failed, or NULL */
    char *path;                  /* its cgroup, as /proc/PID/cgroup says */
    bool has_stats;
    CgroupStats stats;
} WsCgroup;

struct AgentCgroups {
    Agent *agent;
    ScopeManager *scopes;        /* NULL: none here (reason says why) */
    char *reason;
    sd_event_source *timer;
    WsCgroup *ws;
    size_t n_ws;
};

static WsCgroup *ws_get(AgentCgroups *c, const char *id, bool create) {
    for (size_t i = 0; i < c->n_ws; i++)
        if (streq(c->ws[i].id, id))
            return &c->ws[i];
    if (!create)
        return NULL;
    WsCgroup *t = realloc(c->ws, sizeof(*t) * (c->n_ws + 1));
    if (!t)
        return NULL;
    c->ws = t;
    WsCgroup *w = &t[c->n_ws];
    *w = (WsCgroup) { .id = strdup(id) };
    if (!w->id || scope_unit_name(agent_layout(c->agent)->root, id, &w->unit) < 0) {
        free(w->id);
        return NULL;
    }
    c->n_ws++;
    return w;
}

static void ws_done(WsCgroup *w) {
    free(w->id);
    free(w->unit);
    free(w->error);
    free(w->path);
}

/* The request's userdata: the workspace may be forgotten meanwhile. */
typedef struct PlaceCtx {
    Agent *agent;
    char *id;
    pid_t pid;
} PlaceCtx;

static void on_placed(int error, const char *message, void *userdata) {
    PlaceCtx *p = userdata;
    AgentCgroups *c = p->agent->cgroups;
    WsCgroup *w = c ? ws_get(c, p->id, false) : NULL;
    if (w && w->placed_pid == p->pid) {
        w->placing = false;
        free(w->error);
        w->error = NULL;
        if (error < 0) {
            w->error = strdup(message ?: strerror(-error));
            log_warning("workspace %s: cannot put the daemon (pid %d) into its scope %s: %s", p->id, (int) p->pid,
                        w->unit, message ?: strerror(-error));
        } else
            log_debug("workspace %s: daemon (pid %d) in %s", p->id, (int) p->pid, w->unit);
    }
    free(p->id);
    free(p);
}

static bool in_own_scope(const WsCgroup *w, pid_t pid) {
    _cleanup_free_ char *path = NULL;
    if (cgroup_of_pid(pid, &path) < 0)
        return false;
    const char *base = strrchr(path, '/');
    return base && streq(base + 1, w->unit);
}

static void place(Agent *a, WsCgroup *w, pid_t pid, bool force) {
    AgentCgroups *c = a->cgroups;
    if (!force && (w->placed_pid == pid || in_own_scope(w, pid))) {
        w->placed_pid = pid;
        return;
    }
    PlaceCtx *p = calloc(1, sizeof(*p));
    if (!p || !(p->id = strdup(w->id))) {
        free(p);
        return;
    }
    p->agent = a;
    p->pid = pid;
    char desc[128];
    snprintf(desc, sizeof desc, "layoutd workspace %s", w->id);
    int r = scope_manager_place(c->scopes, w->unit, pid, desc, &agent_layout(a)->workspace.resources, on_placed, p);
    if (r < 0) {
        log_warning_errno(r, "workspace %s: cannot ask systemd for its scope: %m", w->id);
        free(p->id);
        free(p);
        return;
    }
    w->placed_pid = pid;
    w->placing = true;
}

static void cgroups_daemon_running(Agent *a, const char *id, pid_t pid) {
    AgentCgroups *c = a->cgroups;
    if (!c || !c->scopes || pid <= 0)
        return;
    WsCgroup *w = ws_get(c, id, true);
    if (w)
        place(a, w, pid, false);
}

static void cgroups_layout_changed(Agent *a) {
    AgentCgroups *c = a->cgroups;
    size_t n = a->supervisor ? supervisor_count(a->supervisor) : 0;
    if (!c || !c->scopes)
        return;
    /* New limits: every running daemon's scope gets them (the scope
     * exists, so this is the attach + SetUnitProperties path). */
    for (size_t i = 0; i < n; i++) {
        WorkspaceStatus st;
        if (supervisor_get_status_by_index(a->supervisor, i, &st) < 0 || st.pid <= 0)
            continue;
        WsCgroup *w = ws_get(c, st.id, true);
        if (w)
            place(a, w, st.pid, true);
    }
}

static void cgroups_workspace_removed(Agent *a, const char *id) {
    AgentCgroups *c = a->cgroups;
    for (size_t i = 0; c && i < c->n_ws; i++)
        if (streq(c->ws[i].id, id)) {
            ws_done(&c->ws[i]);
            c->ws[i] = c->ws[--c->n_ws];
            return;
        }
}

static int on_stats_timer(sd_event_source *s, uint64_t usec, void *userdata) {
    Agent *a = userdata;
    AgentCgroups *c = a->cgroups;
    size_t n = a->supervisor ? supervisor_count(a->supervisor) : 0;
    for (size_t i = 0; i < n; i++) {
        WorkspaceStatus st;
        if (supervisor_get_status_by_index(a->supervisor, i, &st) < 0)
            continue;
        WsCgroup *w = ws_get(c, st.id, st.pid > 0);
        if (!w)
            continue;
        w->has_stats = false;
        if (st.pid <= 0)
            continue;
        free(w->path);
        w->path = NULL;
        if (cgroup_of_pid(st.pid, &w->path) >= 0 && cgroup_read_stats(w->path, &w->stats) >= 0)
            w->has_stats = true;
    }
    (void) sd_event_source_set_time_relative(s, STATS_INTERVAL);
    (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
    return 0;
}

static int cgroups_start_scopes(Agent *a) {
    AgentCgroups *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->agent = a;
    a->cgroups = c;
    int r = scope_manager_new(a->event, &c->scopes);
    if (r < 0) {
        const char *why = r == -ENOMEDIUM ? "no unified (v2) cgroup hierarchy at /sys/fs/cgroup"
                          : r == -EHOSTDOWN ? "systemd is not the service manager here"
                                            : strerror(-r);
        c->reason = strdup(why);
        log_notice("Workspaces run without cgroups of their own (no per-workspace limits or figures): %s", why);
    } else
        log_info("Each workspace's daemon runs in its own systemd scope in layoutd.slice%s",
                 scope_manager_uses_private_bus(c->scopes) ? " (asked for on systemd's private socket: no system bus)"
                                                           : "");
    if (!cgroup_unified())
        return 0; /* nothing to read either */
    r = sd_event_add_time_relative(a->event, &c->timer, CLOCK_MONOTONIC, 2 * USEC_PER_SEC, USEC_PER_SEC,
                                   on_stats_timer, a);
    return r < 0 ? r : 0;
}

static void cgroups_free(Agent *a) {
    AgentCgroups *c = a->cgroups;
    if (!c)
        return;
    c->timer = sd_event_source_disable_unref(c->timer);
    c->scopes = scope_manager_free(c->scopes);
    for (size_t i = 0; i < c->n_ws; i++)
        ws_done(&c->ws[i]);
    free(c->ws);
    free(c->reason);
    a->cgroups = mfree(c);
}

/* /v1/status's "cgroups": {enabled, reason}. */
static void cgroups_status_json(Agent *a, json_object *status) {
    AgentCgroups *c = a->cgroups;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "enabled", json_object_new_boolean(c && c->scopes));
    json_object_object_add(o, "reason", c && c->reason ? json_object_new_string(c->reason) : NULL);
    json_object_object_add(status, "cgroups", o);
}

static json_object *pressure(double avg10, uint64_t usec) {
    json_object *p = json_object_new_object();
    json_object_object_add(p, "some_avg10", json_object_new_double(avg10));
    json_object_object_add(p, "some_total_seconds", json_object_new_double((double) usec / USEC_PER_SEC));
    return p;
}

static json_object *limit(uint64_t v) {
    return v == UINT64_MAX ? json_object_new_string("max") : json_object_new_uint64(v);
}

json_object *agent_cgroups_workspace_json(Agent *a, const char *id) {
    AgentCgroups *c = a->cgroups;
    WsCgroup *w = c ? ws_get(c, id, false) : NULL;
    if (!c || !c->scopes || !w)
        return NULL;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "unit", json_object_new_string(w->unit));
    json_object_object_add(o, "path", w->path ? json_object_new_string(w->path) : NULL);
    json_object_object_add(o, "error", w->error ? json_object_new_string(w->error) : NULL);
    if (w->has_stats) {
        const CgroupStats *s = &w->stats;
        json_object_object_add(o, "cpu_seconds", json_object_new_double((double) s->cpu_usec / USEC_PER_SEC));
        json_object_object_add(o, "memory_bytes", json_object_new_uint64(s->memory_current));
        json_object_object_add(o, "memory_peak_bytes",
                               s->has_memory_peak ? json_object_new_uint64(s->memory_peak) : NULL);
        json_object_object_add(o, "memory_high_bytes", limit(s->memory_high));
        json_object_object_add(o, "memory_max_bytes", limit(s->memory_max));
        json_object_object_add(o, "tasks", json_object_new_uint64(s->pids_current));
        json_object_object_add(o, "tasks_max", limit(s->pids_max));
        json_object_object_add(o, "io_read_bytes", json_object_new_uint64(s->io_read_bytes));
        json_object_object_add(o, "io_write_bytes", json_object_new_uint64(s->io_write_bytes));
        json_object_object_add(o, "oom_kills", json_object_new_uint64(s->oom_kills));
        json_object *p = json_object_new_object();
        json_object_object_add(p, "cpu", pressure(s->cpu_pressure_avg10, s->cpu_pressure_usec));
        json_object_object_add(p, "memory", pressure(s->memory_pressure_avg10, s->memory_pressure_usec));
        json_object_object_add(p, "io", pressure(s->io_pressure_avg10, s->io_pressure_usec));
        json_object_object_add(o, "pressure", p);
    }
    return o;
}

static void cgroups_metrics(Agent *a, MetricsWriter *w) {
    AgentCgroups *c = a->cgroups;
    if (!c || !c->scopes)
        return;
#define FAMILY(name, type, help, value)                                                              \
    do {                                                                                             \
        (void) metrics_writer_family(w, name, type, help);                                          \
        for (size_t i = 0; i < c->n_ws; i++)                                                         \
            if (c->ws[i].has_stats) {                                                                \
                const CgroupStats *s = &c->ws[i].stats;                                              \
                (void) s;                                                                            \
                (void) metrics_writer_sample(w, (const char *const[]) { "workspace", c->ws[i].id, NULL }, \
                                             (double) (value));                                     \
            }                                                                                        \
    } while (0)
    FAMILY("layoutd_workspace_cpu_seconds_total", METRIC_COUNTER, "CPU time of the workspace's daemon (its cgroup)",
           (double) s->cpu_usec / USEC_PER_SEC);
    FAMILY("layoutd_workspace_memory_bytes", METRIC_GAUGE, "Memory charged to the workspace's cgroup",
           s->memory_current);
    FAMILY("layoutd_workspace_memory_peak_bytes", METRIC_GAUGE, "Peak memory of the workspace's cgroup",
           s->memory_peak);
    FAMILY("layoutd_workspace_tasks", METRIC_GAUGE, "Tasks (threads) in the workspace's cgroup", s->pids_current);
    FAMILY("layoutd_workspace_io_read_bytes_total", METRIC_COUNTER, "Bytes the workspace's cgroup read from devices",
           s->io_read_bytes);
    FAMILY("layoutd_workspace_io_written_bytes_total", METRIC_COUNTER,
           "Bytes the workspace's cgroup wrote to devices", s->io_write_bytes);
    FAMILY("layoutd_workspace_oom_kills_total", METRIC_COUNTER, "OOM kills in the workspace's cgroup", s->oom_kills);
#undef FAMILY
    (void) metrics_writer_family(w, "layoutd_workspace_pressure_seconds_total", METRIC_COUNTER,
                                 "Time some task of the workspace's cgroup stalled on a resource (PSI some)");
    for (size_t i = 0; i < c->n_ws; i++) {
        const WsCgroup *x = &c->ws[i];
        if (!x->has_stats)
            continue;
        const struct {
            const char *name;
            uint64_t usec;
        } res[] = { { "cpu", x->stats.cpu_pressure_usec },
                    { "memory", x->stats.memory_pressure_usec },
                    { "io", x->stats.io_pressure_usec } };
        for (size_t k = 0; k < ELEMENTSOF(res); k++)
            (void) metrics_writer_sample(w, (const char *const[]) { "workspace", x->id, "resource", res[k].name, NULL },
                                         (double) res[k].usec / USEC_PER_SEC);
    }
}

static int cgroups_start(Agent *a) {
    int r = cgroups_start_scopes(a);
    if (r < 0)
        log_warning_errno(r, "Cannot set up per-workspace cgroups, ignoring: %m");
    return r;
}

const AgentModule agent_cgroups_module = {
    .name = "cgroups",
    .start = cgroups_start,
    .layout_changed = cgroups_layout_changed,
    .free = cgroups_free,
    .metrics = cgroups_metrics,
    .status_json = cgroups_status_json,
    .daemon_running = cgroups_daemon_running,
    .workspace_removed = cgroups_workspace_removed,
};
