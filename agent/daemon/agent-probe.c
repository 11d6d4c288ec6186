/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The flush probe: every api.flush_probe_interval, a fresh 4 KiB file is
 * written and fsynced on every volume that is up, and timed: the volume's
 * current flush cost, the very thing layoutd exists to bound. A fresh file
 * needs new blocks, so a full or read-only volume shows here (ENOSPC,
 * EROFS) as it does for its workspaces. Each probe also brings statvfs of
 * every volume, so how full a volume is, and its health, is never older
 * than one probe interval. It runs in a worker, because an fsync on a
 * busy volume can take seconds.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "agent.h"
#include "log.h"
#include "log-messages.h"
#include "util.h"

struct AgentProbe {
    FlushProbe *probes;          /* per volume probed, kept across reloads */
    size_t n_probes;
    DaemonStats *daemon_stats;   /* per workspace */
    size_t n_daemon_stats;
    sd_event_source *timer;
    Worker *prober;
    char **volumes;              /* volumes of the running probe, in order */
};

FlushProbe *agent_flush_probe_find(Agent *a, const char *volume) {
    AgentProbe *pr = a->probe;
    for (size_t i = 0; pr && i < pr->n_probes; i++)
        if (streq(pr->probes[i].volume, volume))
            return &pr->probes[i];
    return NULL;
}

static FlushProbe *probe_get(Agent *a, const char *volume) {
    AgentProbe *pr = a->probe;
    FlushProbe *p = agent_flush_probe_find(a, volume);
    if (p)
        return p;
    /* Buckets from 100 us to 30 s: a healthy probe takes a millisecond or
     * two, a shared journal under load tens of seconds. */
    static const double bounds[] = { 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                     0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10, 30 };
    FlushProbe *t = realloc(pr->probes, sizeof(FlushProbe) * (pr->n_probes + 1));
    if (!t)
        return NULL;
    pr->probes = t;
    p = &pr->probes[pr->n_probes];
    *p = (FlushProbe) { .volume = strdup(volume) };
    if (!p->volume)
        return NULL;
    (void) metrics_histogram_init(&p->histogram, bounds, ELEMENTSOF(bounds));
    pr->n_probes++;
    return p;
}

int agent_daemon_stats_path(Agent *a, const char *id, char **ret) {
    return asprintf(ret, "%s/run/%s.stats", agent_layout(a)->root, id) < 0 ? -ENOMEM : 0;
}

const DaemonStats *agent_daemon_stats(Agent *a, const char *id) {
    AgentProbe *pr = a->probe;
    for (size_t i = 0; pr && i < pr->n_daemon_stats; i++)
        if (streq(pr->daemon_stats[i].id, id))
            return &pr->daemon_stats[i];
    return NULL;
}

static DaemonStats *stats_get(Agent *a, const char *id) {
    AgentProbe *pr = a->probe;
    DaemonStats *d = (DaemonStats *) agent_daemon_stats(a, id);
    if (d)
        return d;
    DaemonStats *t = realloc(pr->daemon_stats, sizeof(*t) * (pr->n_daemon_stats + 1));
    if (!t)
        return NULL;
    pr->daemon_stats = t;
    d = &t[pr->n_daemon_stats];
    *d = (DaemonStats) { .id = strdup(id) };
    if (!d->id)
        return NULL;
    pr->n_daemon_stats++;
    return d;
}

/* The shard an object is in (examples/wsfs/README.md, "Content shards"). */
static unsigned digest_shard(const char *hex, unsigned shards) {
    char head[5] = {};
    if (!hex || strlen(hex) < 4 || shards == 0)
        return UINT_MAX;
    memcpy(head, hex, 4);
    return (unsigned) (strtoul(head, NULL, 16) % shards);
}

uint64_t agent_content_missing(Agent *a, const char *volume, unsigned *ret_workspaces, const char **ret_example) {
    AgentProbe *pr = a->probe;
    const Pool *p = layout_pool(agent_layout(a), POOL_CONTENT);
    unsigned shard, n = 0;
    uint64_t total = 0;
    const char *example = NULL;
    if (!p || !pr || sscanf(volume, "content-%u", &shard) != 1)
        return 0;
    for (size_t i = 0; i < pr->n_daemon_stats; i++) {
        const DaemonStats *d = &pr->daemon_stats[i];
        if (!d->known || d->objects_missing == 0 || !state_record_find_workspace(agent_record(a), d->id))
            continue;
        /* The digests it names say which shard lacks them; without any,
         * every shard is suspect. */
        bool here = !d->missing || !d->missing[0];
        for (char **m = d->missing; m && *m; m++)
            if (digest_shard(*m, p->shards ?: 1) == shard) {
                here = true;
                example = example ?: *m;
            }
        if (!here)
            continue;
        n++;
        total += d->objects_missing;
    }
    if (ret_workspaces)
        *ret_workspaces = n;
    if (ret_example)
        *ret_example = example;
    return total;
}

static void stats_merge(Agent *a, json_object *daemons) {
    AgentProbe *pr = a->probe;
    for (size_t i = 0; daemons && i < json_object_array_length(daemons); i++) {
        json_object *o = json_object_array_get_idx(daemons, i), *v;
        const char *id = json_object_object_get_ex(o, "id", &v) ? json_object_get_string(v) : NULL;
        DaemonStats *d = id ? stats_get(a, id) : NULL;
        if (!d)
            continue;
        if (json_object_object_get_ex(o, "error", &v)) {
            d->known = false; /* no file yet (a daemon that does not write one, or has not yet) */
            continue;
        }
        uint64_t before = d->known ? d->objects_missing : 0;
        d->known = true;
        d->objects_missing = json_object_object_get_ex(o, "objects_missing", &v) ? json_object_get_uint64(v) : 0;
        d->missing_eio = json_object_object_get_ex(o, "missing_eio", &v) ? json_object_get_uint64(v) : 0;
        d->missing = strv_free(d->missing);
        json_object *list;
        if (json_object_object_get_ex(o, "missing_objects", &list) && json_object_is_type(list, json_type_array))
            for (size_t k = 0; k < json_object_array_length(list) && k < 16; k++) {
                const char *hex = json_object_get_string(json_object_array_get_idx(list, k));
                if (hex && strv_extend(&d->missing, hex) < 0)
                    break;
            }
        if (d->objects_missing > before)
            log_context(LOG_ERR, 0,
                        &(const LogContext) { .workspace = id, .message_id = LAYOUTD_MESSAGE_OBJECTS_MISSING },
                        "workspace %s: %" PRIu64 " object(s) its files reference are missing from the content pool "
                        "(%s%s): those files read as I/O errors; `layoutctl check` lists them",
                        id, d->objects_missing, d->missing && d->missing[0] ? "one is " : "",
                        d->missing && d->missing[0] ? d->missing[0] : "no digest reported");
        else if (before > 0 && d->objects_missing == 0)
            log_notice("workspace %s: no object is missing any more", id);
    }
    /* Workspaces that are gone take their figures with them. */
    for (size_t i = pr->n_daemon_stats; i > 0; i--)
        if (!state_record_find_workspace(agent_record(a), pr->daemon_stats[i - 1].id)) {
            free(pr->daemon_stats[i - 1].id);
            strv_free(pr->daemon_stats[i - 1].missing);
            pr->daemon_stats[i - 1] = pr->daemon_stats[--pr->n_daemon_stats];
        }
}

static void on_probed(Worker *w, int error, const char *message, ApplyResult *res, Observation *obs,
                      json_object *extra, void *userdata) {
    Agent *a = userdata;
    AgentProbe *pr = a->probe;
    json_object *probes = NULL;
    if (error < 0)
        log_warning("Flush probe failed: %s", message ?: strerror(-error));
    else if (extra && json_object_object_get_ex(extra, "probes", &probes))
        for (size_t i = 0; pr->volumes && pr->volumes[i] && i < json_object_array_length(probes); i++) {
            json_object *o = json_object_array_get_idx(probes, i), *v;
            const char *volume = pr->volumes[i];
            FlushProbe *p = probe_get(a, volume);
            if (!p)
                continue;
            int err = json_object_object_get_ex(o, "error", &v) ? json_object_get_int(v) : EIO;
            uint64_t usec = json_object_object_get_ex(o, "usec", &v) ? json_object_get_uint64(v) : 0;
            bool was_failing = p->last_error != 0;
            p->at = now_usec(CLOCK_BOOTTIME);
            p->last_error = err;
            if (err) {
                if (!was_failing)
                    log_warning("volume %s: flush probe failed: %s", volume, strerror(err));
                p->n_recent = 0; /* what it measured before says nothing now */
                continue;
            }
            if (was_failing)
                log_notice("volume %s: flush probe works again", volume);
            p->has_last = true;
            p->last = usec;
            memmove(p->recent + 1, p->recent, sizeof(p->recent[0]) * (FLUSH_PROBE_RECENT - 1));
            p->recent[0] = usec;
            p->n_recent = MIN(p->n_recent + 1, (unsigned) FLUSH_PROBE_RECENT);
            metrics_histogram_observe(&p->histogram, (double) usec / USEC_PER_SEC);
        }
    if (error >= 0 && probes)
        agent_volumes_merge_statfs(a, probes);
    json_object *daemons;
    if (error >= 0 && extra && json_object_object_get_ex(extra, "daemons", &daemons))
        stats_merge(a, daemons);
    json_object *quotas;
    if (error >= 0 && extra && json_object_object_get_ex(extra, "quotas", &quotas))
        agent_quota_merge(a, quotas);
    apply_result_free(res);
    observation_free(obs);
    json_object_put(extra);
    pr->prober = worker_free(pr->prober);
    pr->volumes = strv_free(pr->volumes);
    /* A probe that starts or stops failing changes the volume's health
     * now, not at the next observation. */
    agent_volumes_changed(a);
}

static int probe_run(Agent *a) {
    AgentProbe *pr = a->probe;
    const Observation *obs = a->engine->observation;
    _cleanup_strv_free_ char **vols = NULL;
    int r;
    if (pr->prober)
        return 0; /* the previous probe is still stuck in fsync: that is the news */
    json_object *args = json_object_new_object(), *paths = json_object_new_array();
    if (!args || !paths) {
        json_object_put(args);
        json_object_put(paths);
        return -ENOMEM;
    }
    json_object_object_add(args, "paths", paths);
    for (size_t i = 0; obs && i < obs->n; i++) {
        const VolumeObservation *v = &obs->volumes[i];
        if (!volume_observation_is_up(v) || !v->mount_path)
            continue;
        json_object_array_add(paths, json_object_new_string(v->mount_path));
        if ((r = strv_extend(&vols, v->name)) < 0) {
            json_object_put(args);
            return r;
        }
    }
    if (!vols) {
        json_object_put(args);
        return 0;
    }
    json_object *stats = json_object_new_array();
    StateRecord *record = agent_record(a);
    for (size_t i = 0; stats && i < record->n_workspaces; i++) {
        _cleanup_free_ char *path = NULL;
        if (!record->workspaces[i]->active || agent_daemon_stats_path(a, record->workspaces[i]->id, &path) < 0)
            continue;
        json_object *o = json_object_new_object();
        json_object_object_add(o, "id", json_object_new_string(record->workspaces[i]->id));
        json_object_object_add(o, "path", json_object_new_string(path));
        json_object_array_add(stats, o);
    }
    json_object_object_add(args, "stats", stats);
    json_object_object_add(args, "quotas", agent_quota_probe_args(a));
    WorkerRequest req = { .op = WORKER_OP_PROBE, .layout = agent_layout(a), .record = agent_record(a), .args = args };
    WorkerCallbacks cb = { .on_done = on_probed };
    r = worker_start(a->event, AGENT_SELF_EXE, &req, &cb, a, &pr->prober);
    json_object_put(args);
    if (r < 0)
        return r;
    pr->volumes = TAKE_PTR(vols);
    return 0;
}

static int on_probe_timer(sd_event_source *s, uint64_t usec, void *userdata) {
    Agent *a = userdata;
    int r = probe_run(a);
    if (r < 0)
        log_warning_errno(r, "Flush probe could not run, ignoring: %m");
    (void) sd_event_source_set_time_relative(s, agent_layout(a)->api.flush_probe_interval);
    (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
    return 0;
}

static int probe_start(Agent *a) {
    if (agent_layout(a)->api.flush_probe_interval == 0 || a->stopping)
        return 0;
    if (!a->probe && !(a->probe = calloc(1, sizeof(AgentProbe))))
        return -ENOMEM;
    AgentProbe *pr = a->probe;
    if (pr->timer) {
        /* Probe soon, so a new volume gets its first sample. */
        (void) sd_event_source_set_time_relative(pr->timer, USEC_PER_SEC);
        return sd_event_source_set_enabled(pr->timer, SD_EVENT_ONESHOT);
    }
    /* The first probe one second after start, then at the interval. */
    return sd_event_add_time_relative(a->event, &pr->timer, CLOCK_MONOTONIC, USEC_PER_SEC, 0, on_probe_timer, a);
}

/* The samples (histograms) stay: a reload stops and starts the probe. */
static void probe_stop(Agent *a) {
    AgentProbe *pr = a->probe;
    if (!pr)
        return;
    for (size_t i = 0; i < pr->n_daemon_stats; i++) {
        free(pr->daemon_stats[i].id);
        strv_free(pr->daemon_stats[i].missing);
    }
    pr->daemon_stats = mfree(pr->daemon_stats);
    pr->n_daemon_stats = 0;
    pr->timer = sd_event_source_disable_unref(pr->timer);
    pr->prober = worker_free(pr->prober);
    pr->volumes = strv_free(pr->volumes);
}

static void probe_free(Agent *a) {
    probe_stop(a);
    if (!a->probe)
        return;
    for (size_t i = 0; i < a->probe->n_probes; i++)
        free(a->probe->probes[i].volume);
    free(a->probe->probes);
    a->probe = mfree(a->probe);
}

static void probe_metrics(Agent *a, MetricsWriter *w) {
    AgentProbe *pr = a->probe;
    size_t n = pr ? pr->n_probes : 0;
    (void) metrics_writer_family(w, "layoutd_volume_flush_probe_seconds", METRIC_HISTOGRAM,
                                 "Time to write and fsync a fresh 4 KiB file on the volume (its flush cost)");
    for (size_t i = 0; i < n; i++) {
        const FlushProbe *p = &pr->probes[i];
        (void) metrics_histogram_write(&p->histogram, w, (const char *const[]) { "volume", p->volume, NULL });
    }
    (void) metrics_writer_family(w, "layoutd_volume_flush_probe_error", METRIC_GAUGE,
                                 "errno of the latest flush probe of the volume (0: it worked)");
    for (size_t i = 0; i < n; i++)
        (void) metrics_writer_sample(w, (const char *const[]) { "volume", pr->probes[i].volume, NULL },
                                     pr->probes[i].last_error);
}

/* A reload: probe again soon, at the layout's interval (or no more). */
static void probe_layout_changed(Agent *a) {
    probe_stop(a);
    (void) probe_start(a);
}

static int cmp_usec(const void *a, const void *b) {
    usec_t x = *(const usec_t *) a, y = *(const usec_t *) b;
    return x < y ? -1 : x > y ? 1 : 0;
}

/* The figure placement weighs (docs/placement.md, "Measured flush cost"):
 * the lower median of the last FLUSH_PROBE_RECENT samples, so that one
 * slow fsync (a host journal commit that lands on an idle volume) does
 * not count and a volume slow in two probes out of three does. None
 * before two samples, and when the probe is off, failing there, or its latest sample is older than
 * four intervals while no probe is running (a pause, or a reload that
 * turned it off: the samples stay, and say nothing of now). A probe that
 * is still stuck in fsync keeps the figures: what they said is still
 * the best guess. */
static bool probe_flush_cost(Agent *a, const char *volume, usec_t *ret) {
    usec_t interval = agent_layout(a)->api.flush_probe_interval;
    const FlushProbe *p = agent_flush_probe_find(a, volume);
    /* Two samples at least: the lower median of one would be that one
     * fsync, which is what the median is there to discount. */
    if (interval == 0 || !p || p->last_error != 0 || p->n_recent < 2)
        return false;
    if (!a->probe->prober && now_usec(CLOCK_BOOTTIME) > p->at + 4 * interval)
        return false;
    usec_t s[FLUSH_PROBE_RECENT];
    memcpy(s, p->recent, sizeof(s[0]) * p->n_recent);
    qsort(s, p->n_recent, sizeof(s[0]), cmp_usec);
    *ret = s[(p->n_recent - 1) / 2];
    return true;
}

static void probe_volume_json(Agent *a, const VolumeObservation *v, json_object *o) {
    FlushProbe *p = agent_flush_probe_find(a, v->name);
    if (p) {
        json_object *f = json_object_new_object();
        json_object_object_add(f, "last_seconds",
                               p->has_last ? json_object_new_double((double) p->last / USEC_PER_SEC) : NULL);
        json_object_object_add(f, "samples", json_object_new_uint64(p->histogram.count));
        usec_t recent;
        json_object_object_add(f, "recent_seconds", probe_flush_cost(a, v->name, &recent)
                                                        ? json_object_new_double((double) recent / USEC_PER_SEC)
                                                        : NULL);
        json_object_object_add(f, "last_error", p->last_error ? json_object_new_string(strerror(p->last_error)) : NULL);
        json_object_object_add(o, "flush_probe", f);
    } else
        json_object_object_add(o, "flush_probe", NULL);
}

const AgentModule agent_probe_module = {
    .name = "probe",
    .when_up = true,
    .start = probe_start,
    .layout_changed = probe_layout_changed,
    .stop = probe_stop,
    .free = probe_free,
    .volume_json = probe_volume_json,
    .metrics = probe_metrics,
    .flush_cost = probe_flush_cost,
};
