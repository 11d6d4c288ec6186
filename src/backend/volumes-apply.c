/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Carrying out a plan. One VolumeSetup per volume records what THIS run
 * made, so that a failure undoes exactly that and nothing older; the other
 * volumes go on.
 */
#include <errno.h>
#include <libgen.h>

#include "util.h"
#include "volumes.h"

/* Steps [from, to) of the plan are one volume's. */
static int apply_volume(const VolumesContext *c, const Plan *plan, size_t from, size_t to, const Observation *obs,
                        ApplyResult *res) {
    const PlanStep *first = &plan->steps[from];
    const VolumeBackend *b = volume_backend_get(first->backend);
    ApplyVolumeResult *v = apply_result_add_volume(res, first->volume);
    if (!v)
        return -ENOMEM;
    if (!b)
        return -EINVAL;
    VolumeSetup s = {
        .layout = c->layout,
        .pool = layout_pool(c->layout, first->role),
        .record = c->record,
        .store = c->store,
        .observed = observation_find(obs, first->volume),
        .result = v,
        .name = v->volume,
    };
    int r = 0;

    for (size_t i = from; i < to; i++) {
        const PlanStep *p = &plan->steps[i];
        ApplyStepResult *sr = apply_volume_result_add_step(v, p->kind, p->description);
        if (!sr) {
            r = -ENOMEM;
            break;
        }
        if (!plan_step_kind_is_action(p->kind)) {
            if (p->blocks) {
                apply_volume_result_fail(v, APPLY_OUTCOME_REFUSED, 0, "%s", p->description);
                if (!v->reason && p->reason)
                    v->reason = strdup(p->reason);
            }
            continue; /* a note: the step result carries it */
        }
        if (c->progress)
            c->progress(c->userdata, v->volume, sr, false);
        int k = b->apply_step(&s, p, sr);
        if (k < 0)
            sr->error = k;
        if (c->progress && k != -ENOMEM)
            c->progress(c->userdata, v->volume, sr, true);
        if (k == -ENOMEM) {
            r = k;
            break;
        }
        if (k < 0 && p->kind == PLAN_STEP_GROW) {
            /* The volume serves at the size it has: a grow that fails (an
             * ext4 resize without CAP_SYS_RESOURCE, a short host) must not
             * take it out of service again, or a reboot would leave its
             * workspaces without their volume. Growth itself retries and
             * reports its failures (agent-capacity.c). */
            apply_volume_result_note(v, "%s stays in service at its current size: the grow failed: %s", v->volume,
                                     sr->message ?: strerror(-k));
            break;
        }
        if (k < 0) {
            sr->error = k;
            apply_volume_result_fail(v, APPLY_OUTCOME_FAILED, k, "%s: %s", plan_step_kind_to_string(p->kind),
                                     sr->message ?: strerror(-k));
            break;
        }
        if (sr->changed && v->outcome == APPLY_OUTCOME_UNCHANGED)
            v->outcome = APPLY_OUTCOME_CHANGED;
    }
    if (r < 0 || v->outcome == APPLY_OUTCOME_FAILED)
        b->rollback(&s);
    volume_setup_done(&s);
    return r;
}

int volumes_apply(const VolumesContext *c, const Plan *plan, const Observation *obs, ApplyResult **ret) {
    if (!c || !c->layout || !plan || !c->record || !ret)
        return -EINVAL;
    _cleanup_(apply_result_freep) ApplyResult *res = NULL;
    int r = apply_result_new(&res);
    if (r < 0)
        return r;

    for (size_t i = 0; i < plan->n_steps;) {
        size_t j = i + 1;
        while (j < plan->n_steps && streq(plan->steps[j].volume, plan->steps[i].volume))
            j++;
        r = apply_volume(c, plan, i, j, obs, res);
        if (r < 0)
            return r;
        i = j;
    }

    /* Volumes the plan had nothing for. */
    for (size_t i = 0; obs && i < obs->n; i++) {
        if (apply_result_find(res, obs->volumes[i].name))
            continue;
        if (obs->volumes[i].declared || state_record_find_volume(c->record, obs->volumes[i].name))
            if (!apply_result_add_volume(res, obs->volumes[i].name))
                return -ENOMEM;
    }
    *ret = TAKE_PTR(res);
    return 0;
}
