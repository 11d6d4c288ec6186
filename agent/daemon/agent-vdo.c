/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vdo-xfs volumes in the agent. The backend observes them (mode, index,
 * physical usage, savings: backend-vdo.c) and reports them in /v1/volumes
 * and the layoutd_vdo_* metrics; here:
 *
 *  - the mode changes are logged as the observation shows them: read-only
 *    mode (possible data loss) marks the volume degraded, so placement
 *    skips it, and the log says what to do (physical usage is judged
 *    with every volume's capacity: src/capacity/health.c);
 *  - the periodic fstrim at each pool's vdo.fstrim_interval, in a child
 *    process (an fstrim of a large XFS on VDO can take minutes): its exit
 *    is an event, logged with fstrim's own output. Online discard is
 *    refused for vdo-xfs (dm-vdo/vdo#57), so this is how freed space goes
 *    back.
 */
#include <inttypes.h>
#include <stdio.h>

#include "agent.h"
#include "child.h"
#include "log.h"
#include "util.h"

#define VDO_TRIM_CHECK_INTERVAL (30 * USEC_PER_SEC)

typedef struct AgentVdoVolume {
    char *volume;
    bool known;                  /* a mode was seen before */
    VdoMode mode;
    bool index_error;

    Child *trim;                 /* running, or NULL */
    usec_t trim_started;         /* CLOCK_MONOTONIC */
    char *trim_output;
    usec_t last_trim_at;         /* CLOCK_REALTIME of the last finish, 0: never */
    usec_t last_trim_took;
    int last_trim_status;        /* exit status, or -signal */
    char *last_trim_output;
    uint64_t trims, trim_failures;
} AgentVdoVolume;

struct AgentVdo {
    Agent *agent;
    sd_event_source *timer;
    usec_t next_trim[_POOL_ROLE_MAX];   /* CLOCK_MONOTONIC, 0: not scheduled */
    AgentVdoVolume *volumes;
    size_t n_volumes;
};

/* The periodic maintenance of pool p's volumes, as its backend says
 * (vdo-xfs: fstrim at vdo.fstrim_interval); 0: none. */
static usec_t maintenance_interval(const Pool *p) {
    VolumeMaintenance m = {};
    usec_t t = p && volume_maintenance(p, NULL, &m) >= 0 ? m.interval : 0;
    volume_maintenance_done(&m);
    return t;
}

static bool layout_has_vdo(const Layout *l) {
    for (PoolRole role = 0; role < _POOL_ROLE_MAX; role++) {
        const Pool *p = layout_pool(l, role);
        if (p && (p->has_vdo || maintenance_interval(p) > 0))
            return true;
    }
    return false;
}

static AgentVdoVolume *vdo_entry_find(Agent *a, const char *volume) {
    for (size_t i = 0; a->vdo && i < a->vdo->n_volumes; i++)
        if (streq(a->vdo->volumes[i].volume, volume))
            return &a->vdo->volumes[i];
    return NULL;
}

static AgentVdoVolume *vdo_entry_get(Agent *a, const char *volume) {
    AgentVdoVolume *v = vdo_entry_find(a, volume);
    if (v || !a->vdo)
        return v;
    AgentVdoVolume *t = realloc(a->vdo->volumes, sizeof(*t) * (a->vdo->n_volumes + 1));
    if (!t)
        return NULL;
    a->vdo->volumes = t;
    v = &t[a->vdo->n_volumes];
    *v = (AgentVdoVolume) { .volume = strdup(volume) };
    if (!v->volume)
        return NULL;
    a->vdo->n_volumes++;
    return v;
}

/* ---- mode changes, from the observation ------------------------------------ */

static void note_volume(Agent *a, const VolumeObservation *v) {
    AgentVdoVolume *av = vdo_entry_get(a, v->name);
    const VdoStats *s = &v->vdo;
    if (!av)
        return;
    const char *mode = vdo_mode_to_string(s->mode) ?: "unknown";
    if (!av->known || av->mode != s->mode) {
        if (s->mode == VDO_MODE_READ_ONLY)
            log_error("volume %s: VDO entered read-only mode (data loss is possible): marked degraded, no new "
                      "workspace is placed on it; stop its workspaces, take it offline and run vdoforcerebuild "
                      "(docs/vdo.md)", v->name);
        else if (s->mode == VDO_MODE_RECOVERING)
            log_warning("volume %s: VDO is recovering after an unclean shutdown (%u%%)", v->name,
                        s->recovery_percentage);
        else if (av->known)
            log_notice("volume %s: VDO mode is %s again", v->name, mode);
        else
            log_info("volume %s: VDO mode %s, index %s, %" PRIu64 "/%" PRIu64 " physical blocks used, saving %d%%",
                     v->name, mode, vdo_index_state_to_string(s->index_state) ?: "unknown", s->physical_used,
                     s->physical_total, s->saving_percent);
    }
    bool index_error = s->index_state == VDO_INDEX_ERROR;
    if (index_error && !av->index_error)
        log_warning("volume %s: the VDO deduplication index is in error: marked degraded (no deduplication)", v->name);
    av->index_error = index_error;
    av->known = true;
    av->mode = s->mode;
}

static void vdo_observed(Agent *a) {
    const Observation *obs = a->engine->observation;
    if (!a->vdo)
        return;
    for (size_t i = 0; obs && i < obs->n; i++)
        if (obs->volumes[i].has_vdo_stats)
            note_volume(a, &obs->volumes[i]);
}

/* ---- fstrim in a child --------------------------------------------------- */

static void on_trim_line(Child *c, const char *line, void *userdata) {
    AgentVdoVolume *av = userdata;
    _cleanup_free_ char *t = NULL;
    if (asprintf(&t, "%s%s%s", av->trim_output ?: "", av->trim_output ? "\n" : "", line) >= 0) {
        free(av->trim_output);
        av->trim_output = TAKE_PTR(t);
    }
}

static void on_trim_exit(Child *c, int status, const char *stderr_text, void *userdata) {
    AgentVdoVolume *av = userdata;
    av->last_trim_at = now_usec(CLOCK_REALTIME);
    av->last_trim_took = now_usec(CLOCK_MONOTONIC) - av->trim_started;
    av->last_trim_status = status;
    free(av->last_trim_output);
    /* One line per mount point: "<path>: 1.2 GiB (1288490188 bytes) trimmed". */
    if (asprintf(&av->last_trim_output, "%s%s%s", av->trim_output ?: "", av->trim_output && *stderr_text ? "\n" : "",
                 stderr_text) < 0)
        av->last_trim_output = NULL;
    av->trim_output = mfree(av->trim_output);
    av->trims++;
    if (status == 0)
        log_info("volume %s: fstrim done in %.1fs: %s", av->volume, (double) av->last_trim_took / USEC_PER_SEC,
                 av->last_trim_output && *av->last_trim_output ? av->last_trim_output : "(no output)");
    else {
        av->trim_failures++;
        log_warning("volume %s: fstrim failed (%s %d) after %.1fs: %s", av->volume,
                    status >= 0 ? "exit status" : "signal", status >= 0 ? status : -status,
                    (double) av->last_trim_took / USEC_PER_SEC,
                    av->last_trim_output && *av->last_trim_output ? av->last_trim_output : "(no output)");
    }
    av->trim = child_free(av->trim);
}

/* Starts the command of the backend's maintenance op (m) for v. */
static int trim_start(Agent *a, const VolumeObservation *v, VolumeMaintenance *m) {
    AgentVdoVolume *av = vdo_entry_get(a, v->name);
    _cleanup_free_ char *exe = NULL;
    if (!av)
        return -ENOMEM;
    if (av->trim) {
        log_notice("volume %s: the previous %s is still running, skipping this one", v->name, m->name);
        return 0;
    }
    int r = child_find_program(m->argv[0], &exe);
    if (r < 0)
        return log_warning_errno(r, "volume %s: %s not found (%s), cannot run %s: %m", v->name, m->argv[0],
                                 m->package ?: "?", m->name);
    char *saved = m->argv[0];
    m->argv[0] = exe;
    ChildCallbacks cb = { .on_line = on_trim_line, .on_exit = on_trim_exit };
    r = child_spawn(a->event, m->argv, &cb, av, &av->trim);
    m->argv[0] = saved;
    if (r < 0)
        return r;
    child_close_input(av->trim);
    av->trim_started = now_usec(CLOCK_MONOTONIC);
    log_info("volume %s: periodic %s of %s started (pid %d)", v->name, m->name, v->mount_path,
             (int) child_pid(av->trim));
    return 0;
}

static int on_trim_timer(sd_event_source *s, uint64_t usec, void *userdata) {
    Agent *a = userdata;
    AgentVdo *vdo = a->vdo;
    const Observation *obs = a->engine->observation;
    usec_t now = now_usec(CLOCK_MONOTONIC);
    bool due[_POOL_ROLE_MAX] = {};
    for (PoolRole role = 0; role < _POOL_ROLE_MAX; role++) {
        usec_t interval = maintenance_interval(layout_pool(agent_layout(a), role));
        if (interval == 0) {
            vdo->next_trim[role] = 0;
            continue;
        }
        if (vdo->next_trim[role] == 0)
            vdo->next_trim[role] = now + interval;
        else if (now >= vdo->next_trim[role]) {
            due[role] = true;
            vdo->next_trim[role] = now + interval;
        }
    }
    for (size_t i = 0; obs && i < obs->n; i++) {
        const VolumeObservation *v = &obs->volumes[i];
        VolumeMaintenance m = {};
        if (!due[v->role] || !v->declared)
            continue;
        /* The backend says whether the volume can take it now (up). */
        int r = volume_maintenance(layout_pool(agent_layout(a), v->role), v, &m);
        if (r >= 0 && m.argv)
            r = trim_start(a, v, &m);
        if (r < 0)
            log_warning_errno(r, "volume %s: cannot start %s, ignoring: %m", v->name, m.name ?: "maintenance");
        volume_maintenance_done(&m);
    }
    (void) sd_event_source_set_time_relative(s, VDO_TRIM_CHECK_INTERVAL);
    (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
    return 0;
}

static int vdo_start(Agent *a) {
    if (a->stopping || !layout_has_vdo(agent_layout(a)))
        return 0;
    if (!a->vdo) {
        a->vdo = calloc(1, sizeof(AgentVdo));
        if (!a->vdo)
            return -ENOMEM;
        a->vdo->agent = a;
    }
    vdo_observed(a);
    if (a->vdo->timer)
        return 0;
    /* fstrim becomes due one interval after the agent started (not at
     * every start: restarts are frequent). */
    return sd_event_add_time_relative(a->event, &a->vdo->timer, CLOCK_MONOTONIC, 2 * USEC_PER_SEC, 0, on_trim_timer,
                                      a);
}

static void vdo_stop(Agent *a) {
    AgentVdo *vdo = a->vdo;
    if (!vdo)
        return;
    vdo->timer = sd_event_source_disable_unref(vdo->timer);
    memset(vdo->next_trim, 0, sizeof vdo->next_trim);
    /* A reload stops and starts the periodic jobs while the loop runs: a
     * running fstrim is left to finish and be logged. Once the loop is
     * over (agent_free), everything goes. */
    if (a->event && sd_event_get_state(a->event) != SD_EVENT_FINISHED)
        return;
    for (size_t i = 0; i < vdo->n_volumes; i++) {
        child_free(vdo->volumes[i].trim);
        free(vdo->volumes[i].volume);
        free(vdo->volumes[i].trim_output);
        free(vdo->volumes[i].last_trim_output);
    }
    free(vdo->volumes);
    a->vdo = mfree(vdo);
}

static void vdo_add_json(Agent *a, const VolumeObservation *v, json_object *o) {
    json_object *j = NULL;
    if (!json_object_object_get_ex(o, "vdo", &j) || !j)
        return;
    /* What only the agent knows: the periodic fstrim. */
    const Pool *p = v->declared ? layout_pool(agent_layout(a), v->role) : NULL;
    json_object *t = json_object_new_object();
    json_object_object_add(t, "interval_seconds",
                           json_object_new_int64((int64_t) (maintenance_interval(p) / USEC_PER_SEC)));
    AgentVdoVolume *av = vdo_entry_find(a, v->name);
    json_object_object_add(t, "running", json_object_new_boolean(av && av->trim));
    json_object_object_add(t, "runs", json_object_new_uint64(av ? av->trims : 0));
    json_object_object_add(t, "failures", json_object_new_uint64(av ? av->trim_failures : 0));
    if (av && av->last_trim_at) {
        json_object_object_add(t, "last_at", json_object_new_int64((int64_t) (av->last_trim_at / USEC_PER_SEC)));
        json_object_object_add(t, "last_seconds", json_object_new_double((double) av->last_trim_took / USEC_PER_SEC));
        json_object_object_add(t, "last_ok", json_object_new_boolean(av->last_trim_status == 0));
        json_object_object_add(t, "last_output",
                               av->last_trim_output ? json_object_new_string(av->last_trim_output) : NULL);
    } else
        json_object_object_add(t, "last_at", NULL);
    json_object_object_add(j, "fstrim", t);
}

static void vdo_metrics(Agent *a, MetricsWriter *w) {
    if (!a->vdo || a->vdo->n_volumes == 0)
        return;
    (void) metrics_writer_family(w, "layoutd_vdo_fstrim_runs_total", METRIC_COUNTER, "Periodic fstrim runs finished");
    for (size_t i = 0; i < a->vdo->n_volumes; i++)
        (void) metrics_writer_sample(w, (const char *const[]) { "volume", a->vdo->volumes[i].volume, NULL },
                                     (double) a->vdo->volumes[i].trims);
    (void) metrics_writer_family(w, "layoutd_vdo_fstrim_failures_total", METRIC_COUNTER, "Periodic fstrim runs that failed");
    for (size_t i = 0; i < a->vdo->n_volumes; i++)
        (void) metrics_writer_sample(w, (const char *const[]) { "volume", a->vdo->volumes[i].volume, NULL },
                                     (double) a->vdo->volumes[i].trim_failures);
}

const AgentModule agent_vdo_module = {
    .name = "vdo",
    .when_up = true,
    .start = vdo_start,
    .stop = vdo_stop,
    .free = vdo_stop,
    .observed = vdo_observed,
    .volume_json = vdo_add_json,
    .metrics = vdo_metrics,
};
