/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Repair: the drift cases with a safe answer. Everything that could lose
 * or hide data (a changed UUID, a foreign or vanished signature, a busy
 * mount path) is refused with its reason; the operator decides.
 */
#include <errno.h>
#include <stdio.h>

#include "util.h"
#include "volumes.h"

static int repair_forget(const PlanStep *p, StateRecord *record, RecordStore *store, const RepairOptions *opts,
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
    int r = record_store_save(store, record, p->volume);
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
 * service; the hand-made mount is left to its owner. The backend's own
 * MOUNT step does it, on the device it knows. */
static int repair_mount(const VolumesContext *c, const PlanStep *p, const Observation *obs, ApplyVolumeResult *v) {
    const VolumeObservation *o = observation_find(obs, p->volume);
    const ProbeResult *fs = o ? volume_observation_fs_probe(o) : NULL;
    const VolumeBackend *b = volume_backend_get(p->backend);
    if (!o || !b || !fs || !fs->type) {
        apply_volume_result_fail(v, APPLY_OUTCOME_REFUSED, 0, "cannot identify %s any more", p->volume);
        return 0;
    }
    PlanStep step = {
        .kind = PLAN_STEP_MOUNT,
        .volume = p->volume,
        .role = p->role,
        .index = p->index,
        .backend = p->backend,
        .mount_path = o->mount_path,
        .fs_type = fs->type,
    };
    ApplyStepResult *sr = apply_volume_result_add_step(v, PLAN_STEP_MOUNT, p->description);
    if (!sr)
        return -ENOMEM;
    VolumeSetup s = {
        .layout = c->layout,
        .pool = layout_pool(c->layout, p->role),
        .record = c->record,
        .store = c->store,
        .observed = o,
        .result = v,
        .name = p->volume,
    };
    int r = b->apply_step(&s, &step, sr);
    volume_setup_done(&s);
    if (r == -ENOMEM)
        return r;
    if (r < 0) {
        sr->error = r;
        apply_volume_result_fail(v, APPLY_OUTCOME_FAILED, r, "%s", sr->message ?: "mount failed");
        return 0;
    }
    apply_step_result_message(sr, "mounted on %s as well (the mount on %s is left to whoever made it)", o->mount_path,
                              o->loop_mount.target ?: "?");
    sr->changed = true;
    v->outcome = APPLY_OUTCOME_CHANGED;
    return 0;
}

int volumes_repair(const VolumesContext *c, const Plan *plan, const Observation *obs, const RepairOptions *opts,
                   ApplyResult **ret) {
    if (!c || !c->layout || !plan || !obs || !c->record || !opts || !ret)
        return -EINVAL;
    _cleanup_(apply_result_freep) ApplyResult *res = NULL;
    int r = apply_result_new(&res);
    if (r < 0)
        return r;
    _cleanup_free_ PlanStep *adopt = calloc(MAX(plan->n_steps, 1u), sizeof(PlanStep));
    size_t n_adopt = 0, pending = 0;
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
            r = repair_forget(p, c->record, c->store, opts, v);
        else if (streq_ptr(p->reason, "mounted-elsewhere"))
            r = repair_mount(c, p, obs, v);
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
        r = volumes_apply(c, &sub, NULL, &a);
        if (r < 0)
            return r;
        r = apply_result_merge(res, &a);
        if (r < 0)
            return r;
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
