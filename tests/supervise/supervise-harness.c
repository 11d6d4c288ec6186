/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Plays the agent for the supervisor's integration tests and benchmarks:
 * one sd-event loop, one Supervisor over the workspaces of a JSON config,
 * DaemonRecords persisted through src/state (so a killed harness re-adopts
 * on its next start), and a status JSON file rewritten after every change
 * (and on SIGUSR1). SIGTERM/SIGINT = stop all workspaces, then exit 0.
 *
 *   supervise-harness CONFIG.json
 *
 * CONFIG: { "record": PATH, "status": PATH, "runtime_dir": PATH|null,
 *           "mount_root": PATH|null (swept for stale mounts at start),
 *           "stop_all_timeout_ms": N,
 *           "defaults": { WORKSPACE FIELDS },
 *           "workspaces": [ { "id": ..., "state_dir": ..., "mountpoint": ...,
 *                             WORKSPACE FIELDS... } ] }
 * WORKSPACE FIELDS: "command": [template...], "content_dirs": [...],
 *   "restart": "always|on-failure|never", "backoff_initial_ms",
 *   "backoff_max_ms", "backoff_reset_after_ms", "crashloop_deaths",
 *   "crashloop_interval_ms", "ready_timeout_ms", "stop_timeout_ms",
 *   "hang_timeout_ms", "restart_on_hang".
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <sys/sysmacros.h>
#include <syslog.h>
#include <systemd/sd-event.h>

#include "argv.h"
#include "state.h"
#include "supervisor.h"
#include "util.h"

typedef struct Harness {
    sd_event *event;
    Supervisor *sup;
    StateRecord *record;
    const char *record_path;
    const char *status_path;
    bool record_dirty, status_dirty;
    sd_event_source *flush_source;
    unsigned transitions;
} Harness;

static void flush_now(Harness *h) {
    int r;
    if (h->record_dirty) {
        h->record_dirty = false;
        r = state_record_save(h->record, h->record_path);
        if (r < 0)
            fprintf(stderr, "harness: cannot save %s: %s\n", h->record_path, strerror(-r));
    }
    if (!h->status_dirty)
        return;
    h->status_dirty = false;
    json_object *root = json_object_new_object(), *wss = json_object_new_object();
    json_object_object_add(root, "harness_pid", json_object_new_int(getpid()));
    json_object_object_add(root, "transitions", json_object_new_int((int) h->transitions));
    json_object_object_add(root, "workspaces", wss);
    usec_t now = now_usec(CLOCK_MONOTONIC);
    for (size_t i = 0; i < supervisor_count(h->sup); i++) {
        WorkspaceStatus st;
        if (supervisor_get_status_by_index(h->sup, i, &st) < 0)
            continue;
        json_object *o = json_object_new_object(), *d = json_object_new_array();
        json_object_object_add(o, "state", json_object_new_string(supervisor_state_to_string(st.state)));
        json_object_object_add(o, "pid", json_object_new_int(st.pid));
        json_object_object_add(o, "adopted", json_object_new_boolean(st.adopted));
        json_object_object_add(o, "restarts", json_object_new_int((int) st.restarts));
        json_object_object_add(o, "exited", json_object_new_boolean(st.exited));
        json_object_object_add(o, "exit_status", json_object_new_int(st.exit_status));
        json_object_object_add(o, "exit_signal", json_object_new_int(st.exit_signal));
        json_object_object_add(o, "state_for_ms", json_object_new_int64((int64_t) ((now - st.since) / 1000)));
        json_object_object_add(o, "ready_latency_us", json_object_new_int64((int64_t) st.ready_latency));
        for (unsigned k = 0; k < st.n_delays; k++)
            json_object_array_add(d, json_object_new_int64((int64_t) (st.delays[k] / 1000)));
        json_object_object_add(o, "delays_ms", d);
        char dev[32];
        snprintf(dev, sizeof dev, "%u:%u", major(st.mount_dev), minor(st.mount_dev));
        json_object_object_add(o, "mount_dev", json_object_new_string(dev));
        json_object_object_add(o, "hangs", json_object_new_int((int) st.hangs));
        /* What the running daemon was started with: the supervisor's copy,
         * or /proc for a re-adopted one (test-readopt.sh compares them). */
        _cleanup_free_ char *env_ws = NULL;
        r = supervisor_daemon_getenv(h->sup, st.id, "LAYOUTD_WORKSPACE", &env_ws);
        json_object_object_add(o, "env_workspace", r > 0 ? json_object_new_string(env_ws) : NULL);
        json_object_object_add(o, "env_error", r < 0 ? json_object_new_int(r) : NULL);
        json_object_object_add(wss, st.id, o);
    }
    const char *text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY);
    r = write_file_atomic(h->status_path, text, strlen(text), 0644);
    if (r < 0)
        fprintf(stderr, "harness: cannot write %s: %s\n", h->status_path, strerror(-r));
    json_object_put(root);
}

static int flush_handler(sd_event_source *s, void *userdata) {
    flush_now(userdata);
    return 0;
}

static void mark(Harness *h, bool record) {
    h->status_dirty = true;
    if (record)
        h->record_dirty = true;
    (void) sd_event_source_set_enabled(h->flush_source, SD_EVENT_ONESHOT);
}

static void on_log(const char *id, int level, const char *line, void *userdata) {
    fprintf(stderr, "[%s]%s %s\n", id ?: "-", level <= LOG_WARNING ? " !" : "", line);
}

static void on_state_change(const char *id, SupervisorState o, SupervisorState n, void *userdata) {
    Harness *h = userdata;
    h->transitions++;
    fprintf(stderr, "[%s] state %s -> %s\n", id, supervisor_state_to_string(o), supervisor_state_to_string(n));
    mark(h, false);
}

static void on_persist(const char *id, const DaemonRecord *rec, void *userdata) {
    Harness *h = userdata;
    WorkspaceRecord *w = state_record_find_workspace(h->record, id);
    if (w)
        w->daemon = *rec;
    mark(h, true);
}

static void on_hang(const char *id, unsigned waiting, void *userdata) {
    fprintf(stderr, "[%s] HANG: %u requests waiting\n", id, waiting);
    mark(userdata, false);
}

static void on_all_stopped(Supervisor *s, void *userdata) {
    Harness *h = userdata;
    fprintf(stderr, "harness: all workspaces stopped\n");
    flush_now(h);
    sd_event_exit(h->event, 0);
}

static int on_term(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
    Harness *h = userdata;
    static bool once;
    if (once)
        return 0;
    once = true;
    fprintf(stderr, "harness: SIGTERM, stopping all workspaces\n");
    usec_t total = 10 * USEC_PER_SEC;
    const char *t = getenv("HARNESS_STOP_ALL_MS");
    if (t)
        total = strtoull(t, NULL, 10) * USEC_PER_MSEC;
    int r = supervisor_stop_all(h->sup, total, on_all_stopped, h);
    if (r < 0)
        sd_event_exit(h->event, 1);
    return 0;
}

static int on_usr1(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
    mark(userdata, false);
    return 0;
}

/* Config access: the workspace's own field, else the default's. */
static json_object *field(json_object *ws, json_object *def, const char *k) {
    json_object *v;
    if (ws && json_object_object_get_ex(ws, k, &v))
        return v;
    if (def && json_object_object_get_ex(def, k, &v))
        return v;
    return NULL;
}

static usec_t ms(json_object *ws, json_object *def, const char *k, usec_t dflt) {
    json_object *v = field(ws, def, k);
    return v ? (usec_t) json_object_get_int64(v) * USEC_PER_MSEC : dflt;
}

static const char *str(json_object *o, const char *k) {
    json_object *v;
    return o && json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string)
               ? json_object_get_string(v) : NULL;
}

static char **strv_of(json_object *a) {
    char **l = NULL;
    for (size_t i = 0; a && i < json_object_array_length(a); i++)
        if (strv_extend(&l, json_object_get_string(json_object_array_get_idx(a, i))) < 0)
            abort();
    if (!l)
        l = calloc(1, sizeof(char *));
    return l;
}

static int add_workspace(Harness *h, json_object *ws, json_object *def, StateRecord *rec) {
    const char *id = str(ws, "id"), *sd = str(ws, "state_dir"), *mp = str(ws, "mountpoint");
    if (!id || !sd || !mp) {
        fprintf(stderr, "harness: workspace needs id, state_dir, mountpoint\n");
        return -EINVAL;
    }
    _cleanup_strv_free_ char **tmpl = strv_of(field(ws, def, "command"));
    _cleanup_strv_free_ char **content = strv_of(field(ws, def, "content_dirs"));
    ArgvValues v = { .id = id, .state_dir = sd, .mountpoint = mp,
                     .content_dirs = (const char *const *) content };
    _cleanup_strv_free_ char **argv = NULL;
    int r = argv_template_expand((const char *const *) tmpl, &v, &argv);
    if (r < 0) {
        fprintf(stderr, "harness: %s: bad command template: %s\n", id, strerror(-r));
        return r;
    }
    json_object *rp = field(ws, def, "restart");
    json_object *roh = field(ws, def, "restart_on_hang");
    json_object *cd = field(ws, def, "crashloop_deaths");
    WorkspaceSpec spec = {
        .id = id,
        .argv = argv,
        .mountpoint = mp,
        .shards = (unsigned) strv_length((const char *const *) content),
        .restart = rp ? restart_policy_from_string(json_object_get_string(rp)) : RESTART_ON_FAILURE,
        .backoff_initial = ms(ws, def, "backoff_initial_ms", USEC_PER_SEC),
        .backoff_max = ms(ws, def, "backoff_max_ms", 60 * USEC_PER_SEC),
        .backoff_reset_after = ms(ws, def, "backoff_reset_after_ms", 120 * USEC_PER_SEC),
        .crashloop_deaths = cd ? (unsigned) json_object_get_int(cd) : 5,
        .crashloop_interval = ms(ws, def, "crashloop_interval_ms", 300 * USEC_PER_SEC),
        .ready_timeout = ms(ws, def, "ready_timeout_ms", 10 * USEC_PER_SEC),
        .stop_timeout = ms(ws, def, "stop_timeout_ms", 10 * USEC_PER_SEC),
        .hang_timeout = ms(ws, def, "hang_timeout_ms", 0),
        .restart_on_hang = roh && json_object_get_boolean(roh),
    };
    if ((int) spec.restart < 0)
        return -EINVAL;

    WorkspaceRecord *w = state_record_find_workspace(rec, id);
    if (!w) {
        WorkspaceRecord n = { .id = (char *) id, .state_dir = (char *) sd, .mountpoint = (char *) mp,
                              .active = true, .created_at = now_usec(CLOCK_REALTIME) };
        r = state_record_add_workspace(rec, &n, &w);
        if (r < 0)
            return r;
        h->record_dirty = true;
    }
    DaemonRecord adopt = w->daemon;
    r = supervisor_add(h->sup, &spec, &adopt);
    if (r < 0)
        fprintf(stderr, "harness: %s: cannot add: %s\n", id, strerror(-r));
    return r;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s CONFIG.json\n", argv[0]);
        return 2;
    }
    json_object *cfg = json_object_from_file(argv[1]);
    if (!cfg) {
        fprintf(stderr, "harness: cannot parse %s\n", argv[1]);
        return 2;
    }
    Harness h = { .record_path = str(cfg, "record"), .status_path = str(cfg, "status") };
    if (!h.record_path || !h.status_path) {
        fprintf(stderr, "harness: config needs record and status\n");
        return 2;
    }
    int r = state_record_load(h.record_path, &h.record);
    if (r < 0) {
        fprintf(stderr, "harness: cannot load %s: %s\n", h.record_path, strerror(-r));
        return 1;
    }

    sigset_t ss;
    sigemptyset(&ss);
    sigaddset(&ss, SIGTERM);
    sigaddset(&ss, SIGINT);
    sigaddset(&ss, SIGUSR1);
    sigprocmask(SIG_BLOCK, &ss, NULL);

    if (sd_event_default(&h.event) < 0)
        return 1;
    sd_event_add_signal(h.event, NULL, SIGTERM, on_term, &h);
    sd_event_add_signal(h.event, NULL, SIGINT, on_term, &h);
    sd_event_add_signal(h.event, NULL, SIGUSR1, on_usr1, &h);
    sd_event_add_defer(h.event, &h.flush_source, flush_handler, &h);
    sd_event_source_set_enabled(h.flush_source, SD_EVENT_OFF);

    SupervisorCallbacks cb = { .on_log = on_log, .on_state_change = on_state_change,
                               .on_persist = on_persist, .on_hang = on_hang };
    r = supervisor_new(h.event, &cb, &h, str(cfg, "runtime_dir"), &h.sup);
    if (r < 0) {
        fprintf(stderr, "harness: supervisor_new: %s\n", strerror(-r));
        return 1;
    }

    json_object *def = NULL, *wss = NULL;
    json_object_object_get_ex(cfg, "defaults", &def);
    json_object_object_get_ex(cfg, "workspaces", &wss);
    for (size_t i = 0; wss && i < json_object_array_length(wss); i++)
        if (add_workspace(&h, json_object_array_get_idx(wss, i), def, h.record) < 0)
            return 1;
    const char *root = str(cfg, "mount_root");
    if (root) {
        r = supervisor_sweep_stale(h.sup, root);
        if (r < 0)
            fprintf(stderr, "harness: sweep: %s\n", strerror(-r));
    }
    mark(&h, true);
    fprintf(stderr, "harness: pid %d supervising %zu workspaces\n", (int) getpid(), supervisor_count(h.sup));

    r = sd_event_loop(h.event);
    flush_now(&h);
    supervisor_free(h.sup);
    h.flush_source = sd_event_source_unref(h.flush_source);
    sd_event_unref(h.event);
    state_record_free(h.record);
    json_object_put(cfg);
    return r < 0 ? 1 : r;
}
