/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The plan driver: the rules every backend shares, then its plan op. Pure. */
#include <errno.h>

#include "util.h"
#include "volumes.h"

static PlanSubject subject_of(const VolumeObservation *v) {
    return (PlanSubject) { .volume = v->name, .role = v->role, .index = v->index, .backend = v->backend };
}

int volumes_plan(const Layout *l, const StateRecord *record, const Observation *obs, Plan **ret) {
    if (!l || !obs || !ret)
        return -EINVAL;
    PlanBuilder b;
    int r = plan_builder_init(&b);
    if (r < 0)
        return r;

    for (size_t i = 0; i < obs->n && b.error >= 0; i++) {
        const VolumeObservation *v = &obs->volumes[i];
        const VolumeRecord *rec = record ? state_record_find_volume(record, v->name) : NULL;
        const Pool *p = layout_pool(l, v->role);
        PlanSubject subj = subject_of(v);

        if (!v->declared || !p) {
            if (rec)
                plan_builder_refuse(&b, &subj, PLAN_STEP_DRIFT, "not-declared", false,
                                    "drift: volume is in the record but the layout does not declare it; left as is "
                                    "(`layoutctl teardown` removes it)");
            continue;
        }
        if (rec && rec->backend != p->backend) {
            plan_builder_refuse(&b, &subj, PLAN_STEP_REFUSE, "backend-changed", true,
                                "refuse %s: it was made as %s, the layout now says %s; backends are never converted "
                                "(tear it down with --destroy-data first)",
                                v->name, backend_to_string(rec->backend), backend_to_string(p->backend));
            continue;
        }
        const VolumeBackend *be = volume_backend_get(p->backend);
        if (!be) {
            b.error = -EINVAL;
            break;
        }
        be->plan(&b, &subj, p, rec, v);
    }
    return plan_builder_finish(&b, ret);
}

int volumes_plan_grow(const Layout *l, const StateRecord *record, const Observation *obs, const char *volume,
                      uint64_t new_size, Plan **ret) {
    if (!l || !obs || !volume || !ret)
        return -EINVAL;
    const VolumeObservation *v = observation_find(obs, volume);
    if (!v)
        return -ENOENT;
    const Pool *p = layout_pool(l, v->role);
    const VolumeRecord *rec = record ? state_record_find_volume(record, volume) : NULL;
    PlanBuilder b;
    int r = plan_builder_init(&b);
    if (r < 0)
        return r;
    PlanSubject subj = subject_of(v);
    const VolumeBackend *be = volume_backend_get(v->backend);
    if (!p || !rec || !v->declared)
        plan_builder_refuse(&b, &subj, PLAN_STEP_REFUSE, "not-declared", true,
                            "cannot grow %s: the layout does not declare it or the record does not hold it", volume);
    else if (!be || !be->plan_grow)
        plan_builder_refuse(&b, &subj, PLAN_STEP_REFUSE, "cannot-grow", true,
                            "cannot grow %s: backend %s has no size to grow", volume, backend_to_string(v->backend));
    else
        be->plan_grow(&b, &subj, p, rec, v, new_size);
    return plan_builder_finish(&b, ret);
}
