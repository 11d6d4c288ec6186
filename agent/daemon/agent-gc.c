/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The content pool's sweep. Objects in the pool belong to the daemons'
 * format, so the sweep is the daemons' own tool (pools.content.gc.command,
 * by default `layoutd-wsfs gc`); the agent only decides when it runs and
 * hands it what to look at:
 *
 *   COMMAND... --content DIR[,DIR...] --state-root DIR [--state-root DIR...]
 *              --grace SECONDS --json [--dry-run]
 *
 * (every content shard; the workspaces/ directory of every state volume
 * that holds workspaces, the kept data of removed ones included). It
 * prints one JSON object as its last line of stdout, with "ok",
 * "objects_swept" and "bytes_freed" (examples/wsfs/README.md). It runs as a child, as fstrim does:
 * every gc.interval, at once when a content volume's free space falls
 * under gc.free_threshold (at most once a minute), and on POST /v1/gc.
 *
 * The one safety rule that is the agent's own: a sweep never runs while a
 * volume that may hold references is out of service. A reference the
 * sweeper cannot see is an object it deletes.
 */
#include <inttypes.h>
#include <stdio.h>

#include "agent.h"
#include "child.h"
#include "log.h"
#include "util.h"

#define GC_CHECK_INTERVAL (30 * USEC_PER_SEC)
#define GC_EARLY_MIN_GAP (60 * USEC_PER_SEC)

typedef struct GcWaiter GcWaiter;
struct GcWaiter {
    GcWaiter *next;
    ApiOperation *op;
};

typedef struct AgentGc {
    Agent *agent;
    sd_event_source *timer;
    usec_t next_run;             /* CLOCK_MONOTONIC */
    usec_t last_early;           /* the last low-space sweep started */

    Child *child;                /* the running sweep */
    bool dry_run;
    const char *trigger;         /* "interval", "low-space", "api" */
    usec_t started;
    char *last_line;             /* its latest stdout line */
    GcWaiter *waiters;           /* operations that end with it */

    /* Since the agent started. */
    uint64_t runs, failures, reclaimed_bytes, reclaimed_objects;
    usec_t last_at;              /* CLOCK_REALTIME of the last end, 0: never */
    usec_t last_success_at;
    usec_t last_took;
    bool last_dry_run;
    json_object *last_result;    /* the sweep's report */
    char *last_error;
} AgentGc;

static const Pool *gc_pool(Agent *a) {
    const Pool *p = layout_pool(agent_layout(a), POOL_CONTENT);
    return p && p->gc.enabled && p->gc.command ? p : NULL;
}

/* A number of the sweep's report (examples/wsfs/README.md: objects_swept,
 * bytes_freed, ...), 0 when absent. */
static uint64_t report_u64(json_object *r, const char *key) {
    json_object *v;
    return r && json_object_object_get_ex(r, key, &v) ? json_object_get_uint64(v) : 0;
}

static void end_waiters(AgentGc *g, const ApiError *err, json_object *result) {
    while (g->waiters) {
        GcWaiter *w = g->waiters;
        g->waiters = w->next;
        if (err)
            api_operation_fail(w->op, err);
        else
            api_operation_succeed(w->op, 200, json_object_get(result));
        api_operation_unref(w->op);
        free(w);
    }
}

static void on_gc_line(Child *c, const char *line, void *userdata) {
    AgentGc *g = userdata;
    if (*line) {
        free(g->last_line);
        g->last_line = strdup(line);
    }
}

static void on_gc_exit(Child *c, int status, const char *stderr_text, void *userdata) {
    AgentGc *g = userdata;
    Agent *a = g->agent;
    usec_t took = now_usec(CLOCK_MONOTONIC) - g->started;
    json_object *report = g->last_line ? json_tokener_parse(g->last_line) : NULL;
    if (report && !json_object_is_type(report, json_type_object)) {
        json_object_put(report);
        report = NULL;
    }
    g->runs++;
    g->last_at = now_usec(CLOCK_REALTIME);
    g->last_took = took;
    g->last_dry_run = g->dry_run;
    free(g->last_error);
    g->last_error = NULL;

    json_object *result = json_object_new_object();
    json_object_object_add(result, "dry_run", json_object_new_boolean(g->dry_run));
    json_object_object_add(result, "trigger", json_object_new_string(g->trigger));
    json_object_object_add(result, "duration_seconds", json_object_new_double((double) took / USEC_PER_SEC));
    json_object_object_add(result, "report", json_object_get(report));
    json_object *ev = json_object_new_object();
    json_object_object_add(ev, "dry_run", json_object_new_boolean(g->dry_run));
    json_object_object_add(ev, "trigger", json_object_new_string(g->trigger));

    const char *tail = stderr_text && *stderr_text ? stderr_text : "(no output)";
    json_object *okv = NULL;
    bool ok = report && json_object_object_get_ex(report, "ok", &okv) && json_object_get_boolean(okv);
    if (status != 0 || !ok) {
        g->failures++;
        if (status != 0 && asprintf(&g->last_error, "%s %d: %s", status > 0 ? "exit status" : "signal",
                                    status > 0 ? status : -status, tail) < 0)
            g->last_error = NULL;
        else if (status == 0 && asprintf(&g->last_error, "%s", report ? "the report says it did not complete"
                                                                 : "no JSON report on stdout") < 0)
            g->last_error = NULL;
        log_context(LOG_WARNING, 0, &(const LogContext) { .message_id = LAYOUTD_MESSAGE_GC_FAILED },
                    "content gc (%s%s) failed after %.1fs: %s", g->trigger, g->dry_run ? ", dry run" : "",
                    (double) took / USEC_PER_SEC, g->last_error ?: "?");
        json_object_object_add(ev, "error", json_object_new_string(g->last_error ?: "?"));
        agent_event(a, "gc.failed", ev);
        ApiError e = {};
        api_fail(&e, -EIO, API_CODE_GC_FAILED, "the content pool's sweep failed: %s", g->last_error ?: "?");
        end_waiters(g, &e, NULL);
    } else {
        uint64_t bytes = report_u64(report, "bytes_freed"), objects = report_u64(report, "objects_swept");
        if (!g->dry_run) {
            g->reclaimed_bytes += bytes;
            g->reclaimed_objects += objects;
        }
        g->last_success_at = g->last_at;
        char b[16];
        log_info("content gc (%s%s) done in %.1fs: %" PRIu64 " objects, %s %s", g->trigger,
                 g->dry_run ? ", dry run" : "", (double) took / USEC_PER_SEC, objects, format_bytes(b, sizeof b, bytes),
                 g->dry_run ? "reclaimable" : "reclaimed");
        json_object_object_add(ev, "reclaimed_bytes", json_object_new_uint64(bytes));
        json_object_object_add(ev, "reclaimed_objects", json_object_new_uint64(objects));
        agent_event(a, "gc.done", ev);
        end_waiters(g, NULL, result);
    }
    json_object_put(g->last_result);
    g->last_result = report;
    json_object_put(result);
    g->last_line = mfree(g->last_line);
    g->child = child_free(g->child);
    /* What it freed shows at the next observation; ask for it now. */
    agent_volumes_refresh(a);
}

/* The sweep's argv: the command, the pool's dirs and roots, the grace. */
static int gc_argv(Agent *a, const Pool *p, bool dry_run, char ***ret, char **ret_why) {
    _cleanup_strv_free_ char **argv = NULL, **args = NULL;
    int r;
    if ((r = agent_content_pool_args(a, p, &args, ret_why)) < 0)
        return r;
    if ((r = strv_copy((const char *const *) p->gc.command, &argv)) < 0)
        return r;
    for (char **x = args; *x; x++)
        if ((r = strv_extend(&argv, *x)) < 0)
            return r;
    char grace[32];
    snprintf(grace, sizeof grace, "%" PRIu64, (uint64_t) (p->gc.grace / USEC_PER_SEC));
    if ((r = strv_extend(&argv, "--grace")) < 0 || (r = strv_extend(&argv, grace)) < 0 ||
        (r = strv_extend(&argv, "--json")) < 0 || (dry_run && (r = strv_extend(&argv, "--dry-run")) < 0))
        return r;
    *ret = TAKE_PTR(argv);
    return 0;
}

static int gc_start(Agent *a, bool dry_run, const char *trigger, char **ret_why) {
    AgentGc *g = a->gc;
    const Pool *p = gc_pool(a);
    _cleanup_strv_free_ char **argv = NULL;
    _cleanup_free_ char *why = NULL;
    if (!g || !p)
        return -EOPNOTSUPP;
    if (g->child)
        return -EALREADY;
    int r = gc_argv(a, p, dry_run, &argv, &why);
    if (r == -EBUSY) {
        log_warning("content gc (%s) not started: %s", trigger, why);
        if (ret_why)
            *ret_why = TAKE_PTR(why);
        return r;
    }
    if (r < 0)
        return r;
    ChildCallbacks cb = { .on_line = on_gc_line, .on_exit = on_gc_exit };
    r = child_spawn(a->event, argv, &cb, g, &g->child);
    if (r < 0)
        return log_warning_errno(r, "content gc: cannot start %s: %m", argv[0]);
    child_close_input(g->child);
    g->dry_run = dry_run;
    g->trigger = trigger;
    g->started = now_usec(CLOCK_MONOTONIC);
    log_info("content gc (%s%s) started: %s (pid %d)", trigger, dry_run ? ", dry run" : "", argv[0],
             (int) child_pid(g->child));
    return 0;
}

int agent_gc_run(Agent *a, bool dry_run, ApiOperation *op, ApiError *err) {
    AgentGc *g = a->gc;
    _cleanup_free_ char *why = NULL;
    if (!g || !gc_pool(a))
        return api_fail(err, -EOPNOTSUPP, API_CODE_NO_GC,
                        "the layout has no content pool sweep (pools.content.gc)");
    if (g->child && g->dry_run != dry_run)
        return api_fail(err, -EBUSY, API_CODE_CONFLICT, "a %s sweep is running; ask again when it ended",
                        g->dry_run ? "dry-run" : "real");
    if (!g->child) {
        int r = gc_start(a, dry_run, "api", &why);
        if (r == -EBUSY)
            return api_fail(err, r, API_CODE_GC_UNSAFE, "not sweeping: %s", why);
        if (r < 0)
            return api_fail(err, r, API_CODE_GC_FAILED, "cannot start the sweep: %s", strerror(-r));
    } else if (op)
        (void) api_operation_step(op, "joined the sweep already running (%s)", g->trigger);
    if (op) {
        GcWaiter *w = calloc(1, sizeof(*w));
        if (!w)
            return -ENOMEM;
        w->op = api_operation_ref(op);
        w->next = g->waiters;
        g->waiters = w;
        (void) api_operation_step(op, "sweeping the content pool%s", dry_run ? " (dry run)" : "");
    }
    return 1;
}

static int on_gc_timer(sd_event_source *s, uint64_t usec, void *userdata) {
    Agent *a = userdata;
    AgentGc *g = a->gc;
    const Pool *p = gc_pool(a);
    usec_t now = now_usec(CLOCK_MONOTONIC);
    if (p && !g->child && a->ready && !a->stopping) {
        if (g->next_run == 0)
            g->next_run = now + p->gc.interval;
        else if (now >= g->next_run) {
            g->next_run = now + p->gc.interval;
            (void) gc_start(a, false, "interval", NULL);
        }
    }
    (void) sd_event_source_set_time_relative(s, GC_CHECK_INTERVAL);
    (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
    return 0;
}

static void gc_observed(Agent *a) {
    AgentGc *g = a->gc;
    const Pool *p = gc_pool(a);
    const Observation *o = a->engine->observation;
    if (!g || !p || g->child || !a->ready || a->stopping || p->gc.free_threshold == 0)
        return;
    usec_t now = now_usec(CLOCK_MONOTONIC);
    if (g->last_early && now - g->last_early < GC_EARLY_MIN_GAP)
        return;
    for (size_t i = 0; o && i < o->n; i++) {
        const VolumeObservation *v = &o->volumes[i];
        if (v->role != POOL_CONTENT || !v->has_statvfs || v->fs_used + v->fs_avail == 0)
            continue;
        uint64_t free_pct = v->fs_avail * 100 / (v->fs_used + v->fs_avail);
        if (free_pct >= p->gc.free_threshold)
            continue;
        log_notice("volume %s: %" PRIu64 "%% free, under gc.free_threshold (%u%%): sweeping the content pool now",
                   v->name, free_pct, p->gc.free_threshold);
        g->last_early = now;
        (void) gc_start(a, false, "low-space", NULL);
        return;
    }
}

static void gc_stop(Agent *a);

static int gc_start_timer(Agent *a) {
    if (!gc_pool(a) || a->stopping) {
        gc_stop(a);
        return 0;
    }
    if (!a->gc) {
        a->gc = calloc(1, sizeof(AgentGc));
        if (!a->gc)
            return -ENOMEM;
        a->gc->agent = a;
    }
    if (a->gc->timer)
        return 0;
    /* The first sweep is one interval after the agent started, not at
     * every start: restarts are frequent, and a fresh start has nothing
     * to reclaim that an hour changes. */
    return sd_event_add_time_relative(a->event, &a->gc->timer, CLOCK_MONOTONIC, 2 * USEC_PER_SEC, 0, on_gc_timer, a);
}

static void gc_stop(Agent *a) {
    AgentGc *g = a->gc;
    if (!g)
        return;
    g->timer = sd_event_source_disable_unref(g->timer);
    if (g->child) {
        /* The sweep is crash-safe by design (quarantine, re-check, then
         * unlink), so stopping it at any point loses nothing live. */
        log_info("content gc: stopping the running sweep (pid %d)", (int) child_pid(g->child));
        g->child = child_free(g->child);
        ApiError e = {};
        api_fail(&e, -ECANCELED, API_CODE_SHUTTING_DOWN, "the agent stopped the sweep");
        end_waiters(g, &e, NULL);
    }
    free(g->last_line);
    json_object_put(g->last_result);
    free(g->last_error);
    a->gc = mfree(a->gc);
}

static json_object *gc_json(Agent *a) {
    AgentGc *g = a->gc;
    const Pool *p = gc_pool(a);
    if (!g || !p)
        return NULL;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "interval_seconds", json_object_new_int64((int64_t) (p->gc.interval / USEC_PER_SEC)));
    json_object_object_add(o, "grace_seconds", json_object_new_int64((int64_t) (p->gc.grace / USEC_PER_SEC)));
    json_object_object_add(o, "free_threshold_percent", json_object_new_int((int) p->gc.free_threshold));
    json_object_object_add(o, "running", json_object_new_boolean(g->child != NULL));
    json_object_object_add(o, "runs", json_object_new_uint64(g->runs));
    json_object_object_add(o, "failures", json_object_new_uint64(g->failures));
    json_object_object_add(o, "reclaimed_bytes", json_object_new_uint64(g->reclaimed_bytes));
    json_object_object_add(o, "reclaimed_objects", json_object_new_uint64(g->reclaimed_objects));
    json_object_object_add(o, "last_at", g->last_at ? json_object_new_int64((int64_t) (g->last_at / USEC_PER_SEC)) : NULL);
    json_object_object_add(o, "last_success_at",
                           g->last_success_at ? json_object_new_int64((int64_t) (g->last_success_at / USEC_PER_SEC))
                                              : NULL);
    json_object_object_add(o, "last_error", g->last_error ? json_object_new_string(g->last_error) : NULL);
    json_object_object_add(o, "last_report", json_object_get(g->last_result));
    return o;
}

static void gc_metrics(Agent *a, MetricsWriter *w) {
    AgentGc *g = a->gc;
    if (!g)
        return;
    (void) metrics_writer_family(w, "layoutd_gc_runs_total", METRIC_COUNTER, "Content pool sweeps that ended");
    (void) metrics_writer_sample(w, NULL, (double) g->runs);
    (void) metrics_writer_family(w, "layoutd_gc_failures_total", METRIC_COUNTER, "Content pool sweeps that failed");
    (void) metrics_writer_sample(w, NULL, (double) g->failures);
    (void) metrics_writer_family(w, "layoutd_gc_reclaimed_bytes_total", METRIC_COUNTER,
                                 "Bytes the content pool's sweeps deleted");
    (void) metrics_writer_sample(w, NULL, (double) g->reclaimed_bytes);
    (void) metrics_writer_family(w, "layoutd_gc_reclaimed_objects_total", METRIC_COUNTER,
                                 "Objects the content pool's sweeps deleted");
    (void) metrics_writer_sample(w, NULL, (double) g->reclaimed_objects);
    (void) metrics_writer_family(w, "layoutd_gc_last_duration_seconds", METRIC_GAUGE,
                                 "How long the latest sweep took");
    if (g->last_at)
        (void) metrics_writer_sample(w, NULL, (double) g->last_took / USEC_PER_SEC);
    (void) metrics_writer_family(w, "layoutd_gc_last_success_timestamp_seconds", METRIC_GAUGE,
                                 "Unix time the latest successful sweep ended");
    if (g->last_success_at)
        (void) metrics_writer_sample(w, NULL, (double) g->last_success_at / USEC_PER_SEC);
    (void) metrics_writer_family(w, "layoutd_gc_running", METRIC_GAUGE, "1 while a sweep runs");
    (void) metrics_writer_sample(w, NULL, g->child ? 1 : 0);
}

/* /v1/status's "gc": null without a sweep. */
static void gc_status_json(Agent *a, json_object *status) {
    json_object_object_add(status, "gc", gc_json(a));
}

const AgentModule agent_gc_module = {
    .name = "gc",
    .when_up = true,
    .start = gc_start_timer,
    .stop = gc_stop,
    .free = gc_stop,
    .observed = gc_observed,
    .metrics = gc_metrics,
    .status_json = gc_status_json,
};
