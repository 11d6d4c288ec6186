/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Repair: the drift cases with a safe answer. Everything that could lose
 * or hide data (a changed UUID, a foreign or vanished signature, a busy
 * mount path) is refused with its reason; the operator decides.
 */
#include <errno.h>
#include <stdio.h>

#include "apply-internal.h"
#include "mount.h"
#include "util.h"

static int repair_forget(const PlanStep *p, StateRecord *record, const char *record_path, const RepairOptions *opts,
                         ApplyVolumeResult *v) {
    ApplyStepResult *sr = apply_volume_result_add_step(v, PLAN_STEP_DRIFT, p->description);
    if (!sr)
        return -ENOMEM;
    if (!opts->forget_missing) {
        apply_step_result_message(sr, "not forgotten without --forget-missing");
        apply_volume_result_fail(v, APPLY_OUTCOME_REFUSED, 0,
                                 "the backing file of %s is gone; `layoutctl repair --forget-missing` forgets it",
                                 p->volume);
        return 0;
    }
    if (state_record_count_workspaces(record, p->volume) > 0) {
        apply_volume_result_fail(v, APPLY_OUTCOME_REFUSED, -EBUSY,
                                 "workspaces are still placed on %s; remove them first", p->volume);
        return 0;
    }
    (void) state_record_remove_volume(record, p->volume);
    int r = apply_save_record(record, record_path);
    if (r < 0) {
        sr->error = r;
        apply_volume_result_fail(v, APPLY_OUTCOME_FAILED, r, "cannot save the record: %s", strerror(-r));
        return 0;
    }
    apply_step_result_message(sr, "forgotten: the next apply carves %s anew", p->volume);
    sr->changed = true;
    v->outcome = APPLY_OUTCOME_CHANGED;
    return 0;
}

/* Mounted by hand elsewhere: mounting the same filesystem at its own path
 * too is safe (one superblock, two mount points) and puts it back in
 * service; the hand-made mount is left to its owner. */
static int repair_mount(const Layout *l, const PlanStep *p, const Observation *obs, ApplyVolumeResult *v) {
    const VolumeObservation *o = observation_find(obs, p->volume);
    ApplyStepResult *sr = apply_volume_result_add_step(v, PLAN_STEP_MOUNT, p->description);
    if (!sr)
        return -ENOMEM;
    if (!o || !o->attached || !o->probed || !o->probe.type) {
        apply_volume_result_fail(v, APPLY_OUTCOME_REFUSED, 0, "cannot identify %s any more", p->volume);
        return 0;
    }
    const Pool *pool = layout_pool(l, p->role);
    int r = mount_volume(o->loop.node, o->mount_path, o->probe.type, pool ? pool->mount_options : NULL);
    if (r < 0) {
        sr->error = r;
        apply_step_result_message(sr, "cannot mount %s on %s: %s", o->loop.node, o->mount_path, strerror(-r));
        apply_volume_result_fail(v, APPLY_OUTCOME_FAILED, r, "%s", sr->message ?: "mount failed");
        return 0;
    }
    apply_step_result_message(sr, "%s mounted on %s as well (the mount on %s is left to whoever made it)",
                              o->loop.node, o->mount_path, o->loop_mount.target);
    sr->changed = true;
    v->outcome = APPLY_OUTCOME_CHANGED;
    return 0;
}

int apply_repair(const Layout *l, const Plan *plan, const Observation *obs, StateRecord *record,
                 const char *record_path, const RepairOptions *opts, ApplyResult **ret) {
    if (!l || !plan || !obs || !record || !opts || !ret)
        return -EINVAL;
    _cleanup_(apply_result_freep) ApplyResult *res = calloc(1, sizeof(*res));
    if (!res)
        return -ENOMEM;
    _cleanup_free_ PlanStep *adopt = calloc(MAX(plan->n_steps, 1u), sizeof(PlanStep));
    size_t n_adopt = 0, pending = 0;
    int r;
    if (!adopt)
        return -ENOMEM;

    for (size_t i = 0; i < plan->n_steps; i++) {
        const PlanStep *p = &plan->steps[i];
        if (p->kind == PLAN_STEP_ADOPT) {
            adopt[n_adopt++] = *p; /* borrowed: freed with plan */
            continue;
        }
        if (plan_step_kind_is_action(p->kind)) {
            pending++;
            continue;
        }
        ApplyVolumeResult *v = apply_result_add_volume(res, p->volume);
        if (!v)
            return -ENOMEM;
        if (streq_ptr(p->reason, "backing-deleted"))
            r = repair_forget(p, record, record_path, opts, v);
        else if (streq_ptr(p->reason, "mounted-elsewhere"))
            r = repair_mount(l, p, obs, v);
        else if (!p->blocks) {
            apply_volume_result_note(v, "%s", p->description);
            r = 0;
        } else {
            ApplyStepResult *sr = apply_volume_result_add_step(v, p->kind, p->description);
            if (!sr)
                return -ENOMEM;
            apply_step_result_message(sr, "not safe to repair automatically (%s)", p->reason ?: "?");
            apply_volume_result_fail(v, APPLY_OUTCOME_REFUSED, 0, "%s", p->description);
            r = 0;
        }
        if (r < 0)
            return r;
    }

    if (n_adopt > 0) {
        Plan sub = { .steps = adopt, .n_steps = n_adopt };
        _cleanup_(apply_result_freep) ApplyResult *a = NULL;
        r = apply_plan(l, &sub, NULL, record, record_path, &a);
        if (r < 0)
            return r;
        /* Move a's volumes into res. */
        for (size_t i = 0; i < a->n_volumes; i++) {
            ApplyVolumeResult *t = realloc(res->volumes, sizeof(ApplyVolumeResult) * (res->n_volumes + 1));
            if (!t)
                return -ENOMEM;
            res->volumes = t;
            res->volumes[res->n_volumes++] = a->volumes[i];
        }
        free(a->volumes);
        a->volumes = NULL;
        a->n_volumes = 0;
    }
    if (pending > 0) {
        ApplyVolumeResult *v = apply_result_add_volume(res, "apply");
        if (!v)
            return -ENOMEM;
        apply_volume_result_note(v, "%zu other change(s) are pending: run `layoutctl apply`", pending);
    }
    *ret = TAKE_PTR(res);
    return 0;
}
