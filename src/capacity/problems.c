/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The problems an operator must see (GET /v1/status, /v1/health), judged
 * from what the agent hands over (its assessments, the latest apply, its
 * daemons' states, the host's figures), never from a device. The agent's
 * health is the worst level found.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "json-util.h"
#include "capacity.h"
#include "state.h"
#include "util.h"

typedef struct Problems {
    json_object *list;
    VolumeHealth worst;
} Problems;

_printf_(6, 7) static int add(Problems *ps, const char *key, const char *name, VolumeHealth level,
                              const char *code, const char *fmt, ...) {
    _cleanup_free_ char *m = NULL;
    va_list ap;
    va_start(ap, fmt);
    int r = vasprintf(&m, fmt, ap);
    va_end(ap);
    if (r < 0)
        return -ENOMEM;
    json_object *p = json_object_new_object();
    if (!p)
        return -ENOMEM;
    if (key)
        json_object_object_add(p, key, json_string_or_null(name));
    json_object_object_add(p, "level", json_string_or_null(volume_health_to_string(level)));
    json_object_object_add(p, "code", json_string_or_null(code));
    json_object_object_add(p, "message", json_string_or_null(m));
    if (json_object_array_add(ps->list, p) < 0) {
        json_object_put(p);
        return -ENOMEM;
    }
    ps->worst = MAX(ps->worst, level);
    return 0;
}

static int volume_problems(Problems *ps, const ProblemInputs *in) {
    int r;
    for (size_t i = 0; i < in->n_volumes; i++) {
        const ProblemVolume *pv = &in->volumes[i];
        const VolumeObservation *v = observation_find(in->observation, pv->name);
        if (!v || (!v->declared && !(in->record && state_record_find_volume(in->record, v->name))))
            continue;
        for (size_t k = 0; pv->assessment && k < pv->assessment->n; k++) {
            const VolumeFinding *f = &pv->assessment->findings[k];
            if ((r = add(ps, "volume", pv->name, f->level, f->code, "%s", f->message)) < 0)
                return r;
        }
    }
    for (size_t i = 0; in->results && i < in->results->n_volumes; i++) {
        const ApplyVolumeResult *v = &in->results->volumes[i];
        if (v->outcome == APPLY_OUTCOME_REFUSED && !observation_find(in->observation, v->volume) &&
            (r = add(ps, "volume", v->volume, VOLUME_HEALTH_DEGRADED, v->reason ?: "refused",
                     "%s was refused and is not used: %s", v->volume, v->message ?: "?")) < 0)
            return r;
        for (char **n = v->notes; n && *n; n++)
            if ((r = add(ps, "volume", v->volume, VOLUME_HEALTH_WARNING, "note", "%s: %s", v->volume, *n)) < 0)
                return r;
        /* A refusal that leaves the volume in service (a shrink): the
         * layout asks for something that was not done. */
        for (size_t k = 0; k < v->n_steps; k++)
            if (v->steps[k].kind == PLAN_STEP_REFUSE && v->outcome != APPLY_OUTCOME_REFUSED &&
                (r = add(ps, "volume", v->volume, VOLUME_HEALTH_WARNING, "refused-change", "%s",
                         v->steps[k].description)) < 0)
                return r;
    }
    return 0;
}

static int workspace_problems(Problems *ps, const ProblemInputs *in) {
    int r;
    for (size_t i = 0; i < in->n_workspaces; i++) {
        const ProblemWorkspace *w = &in->workspaces[i];
        if (w->state == PROBLEM_DAEMON_CRASH_LOOP)
            r = add(ps, "workspace", w->id, VOLUME_HEALTH_FAILED, "crash-loop",
                    "%s: the FUSE daemon hit its crash-loop limit; `layoutctl restart %s` brings it back", w->id,
                    w->id);
        else if (w->state == PROBLEM_DAEMON_BACKOFF)
            r = add(ps, "workspace", w->id, VOLUME_HEALTH_DEGRADED, "backoff",
                    "%s: the FUSE daemon died and is restarted after a backoff", w->id);
        else
            r = 0;
        if (r < 0)
            return r;
        if (w->objects_missing > 0 &&
            (r = add(ps, "workspace", w->id, VOLUME_HEALTH_DEGRADED, "objects-missing",
                     "%s: %" PRIu64 " object(s) its files reference are missing from the content pool (%s%s): "
                     "those files read as I/O errors, their references are kept; restore the pool: this "
                     "clears within seconds of their return (the daemon looks again every 10 s); "
                     "`layoutctl check` lists every file",
                     w->id, w->objects_missing, w->missing_example ? "one is " : "",
                     w->missing_example ?: "digests unknown")) < 0)
            return r;
        /* At 90 %: the tenant's writes fail (ENOSPC) soon, and nothing
         * on the host is wrong, so a warning, not a degraded host. */
        if (w->quota_limit > 0 && (unsigned __int128) w->quota_used * 10 >= (unsigned __int128) w->quota_limit * 9 &&
            (r = add(ps, "workspace", w->id, VOLUME_HEALTH_WARNING, "quota-near-limit",
                     "%s: uses %" PRIu64 " of its %" PRIu64 "-byte quota (%u%%); writes fail with ENOSPC at "
                     "the limit: `layoutctl quota %s SIZE` raises it", w->id, w->quota_used, w->quota_limit,
                     (unsigned) ((unsigned __int128) w->quota_used * 100 / w->quota_limit), w->id)) < 0)
            return r;
        if (w->state == PROBLEM_DAEMON_BLOCKED &&
            (r = add(ps, "workspace", w->id, VOLUME_HEALTH_DEGRADED, "blocked",
                     "%s: not started while %s; it starts by itself once the volume is back in service", w->id,
                     w->blocker ?: "its volumes were out of service")) < 0)
            return r;
    }
    return 0;
}

/* The host filesystem under the backing files: sparse files promise more
 * than they hold, and something else may take the rest. */
static int host_problems(Problems *ps, const ProblemInputs *in) {
    const Observation *ho = in->observation;
    char f[16], pr[16], rs[16];
    int r = 0;
    if (ho && ho->has_backing_free) {
        uint64_t promised = capacity_host_promised(ho);
        GrowthPolicy dflt = { .host_reserve_percent = 5 };
        const Pool *sp = in->state_pool;
        uint64_t reserve = capacity_host_reserve(sp && sp->growth.enabled ? &sp->growth : &dflt, ho);
        if (ho->backing_free < promised)
            r = add(ps, "host", in->root, VOLUME_HEALTH_DEGRADED, "host-overcommitted",
                    "the filesystem under %s/images has %s free, less than the %s its sparse backing files may "
                    "still claim: writes inside the volumes will fail with I/O errors; free space on it now",
                    in->root, format_bytes(f, sizeof f, ho->backing_free), format_bytes(pr, sizeof pr, promised));
        else if (ho->backing_free - promised < reserve)
            r = add(ps, "host", in->root, VOLUME_HEALTH_WARNING, "host-low",
                    "the filesystem under %s/images has %s free beyond what the backing files may claim, under "
                    "the %s reserve: volumes neither grow nor are carved; free space on it",
                    in->root, format_bytes(f, sizeof f, ho->backing_free - promised),
                    format_bytes(rs, sizeof rs, reserve));
        if (r < 0)
            return r;
    }
    if (in->record_save_error < 0 &&
        (r = add(ps, "host", in->root, VOLUME_HEALTH_DEGRADED, "record-unsaved",
                 "the state record %s could not be saved: %s; the latest changes are in memory only until a "
                 "save succeeds (an agent restart now would forget them)",
                 in->record_path, strerror(-in->record_save_error))) < 0)
        return r;
    if (in->reload_error &&
        (r = add(ps, NULL, NULL, VOLUME_HEALTH_DEGRADED, "reload-refused",
                 "the last reload was refused; the previous layout keeps running: %s", in->reload_error)) < 0)
        return r;
    return 0;
}

int capacity_problems(const ProblemInputs *in, json_object **ret, VolumeHealth *ret_worst) {
    Problems ps = { .list = json_object_new_array(), .worst = VOLUME_HEALTH_OK };
    if (!ps.list)
        return -ENOMEM;
    int r = volume_problems(&ps, in);
    if (r >= 0)
        r = workspace_problems(&ps, in);
    if (r >= 0)
        r = host_problems(&ps, in);
    if (r < 0) {
        json_object_put(ps.list);
        return r;
    }
    *ret = ps.list;
    if (ret_worst)
        *ret_worst = ps.worst;
    return 0;
}
