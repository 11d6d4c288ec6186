/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Teardown: the inverse of apply, for the volumes the record lists and
 * nothing else (a volume the plan refused as foreign is not ours to
 * unmount). No lazy unmount unless asked: a busy volume stays mounted and
 * the processes holding it are named.
 */
#include <errno.h>
#include <stdio.h>

#include "util.h"
#include "volumes.h"

static void teardown_volume(const VolumesContext *c, const VolumeObservation *o, VolumeRecord *rec,
                            const TeardownOptions *opts, ApplyVolumeResult *v) {
    StateRecord *record = c->record;
    const VolumeBackend *b = volume_backend_get(rec->backend);
    if (!b) {
        apply_volume_result_fail(v, APPLY_OUTCOME_REFUSED, -EINVAL, "unknown backend; left as is");
        return;
    }
    size_t n = state_record_count_workspaces(record, rec->name);
    if (n > 0) {
        apply_volume_result_fail(v, APPLY_OUTCOME_REFUSED, -EBUSY,
                                 "%zu active workspace(s) are placed on %s; remove them first", n, rec->name);
        return;
    }
    VolumeSetup s = {
        .layout = c->layout,
        .pool = layout_pool(c->layout, rec->role),
        .record = record,
        .store = c->store,
        .observed = o,
        .result = v,
        .name = rec->name,
    };
    b->teardown(&s, o, opts);
    volume_setup_done(&s);
    if (v->outcome == APPLY_OUTCOME_FAILED || v->outcome == APPLY_OUTCOME_REFUSED)
        return;

    _cleanup_free_ char *desc = NULL;
    if (asprintf(&desc, "forget %s in the record%s", rec->name,
                 opts->destroy_data ? "" : " (files kept; apply will not adopt them again)") < 0)
        return;
    ApplyStepResult *sr = apply_volume_result_add_step(v, PLAN_STEP_ADOPT, desc);
    if (!sr)
        return;
    _cleanup_free_ char *name = strdup(rec->name);
    if (!name)
        return;
    (void) state_record_remove_volume(record, name);
    /* Saved after each volume: a crash mid-way must not leave the record
     * claiming a volume we already destroyed. */
    int r = record_store_save(c->store, record, name);
    if (r < 0) {
        sr->error = r;
        apply_volume_result_fail(v, APPLY_OUTCOME_FAILED, r, "cannot save the record: %s", strerror(-r));
        return;
    }
    sr->changed = true;
    v->outcome = APPLY_OUTCOME_CHANGED;
}

int volumes_teardown(const VolumesContext *c, const Observation *obs, const TeardownOptions *opts,
                     ApplyResult **ret) {
    if (!c || !c->layout || !obs || !c->record || !opts || !ret)
        return -EINVAL;
    _cleanup_(apply_result_freep) ApplyResult *res = NULL;
    int r = apply_result_new(&res);
    if (r < 0)
        return r;
    for (size_t i = 0; i < obs->n; i++) {
        const VolumeObservation *o = &obs->volumes[i];
        VolumeRecord *rec = state_record_find_volume(c->record, o->name);
        if (!rec)
            continue; /* not ours */
        ApplyVolumeResult *v = apply_result_add_volume(res, o->name);
        if (!v)
            return -ENOMEM;
        teardown_volume(c, o, rec, opts, v);
    }
    *ret = TAKE_PTR(res);
    return 0;
}
