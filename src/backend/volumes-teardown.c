/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Teardown: the inverse of apply, for the volumes the record lists and
 * nothing else (a volume the plan refused as foreign is not ours to
 * unmount). All or nothing:
 *
 *  1. Planned first (volumes_plan_teardown, pure): each volume's steps, and
 *     what must be refused: a state volume with active workspaces, the
 *     content pool while any workspace that references it stays recorded
 *     (kept data included), a device mounted where layoutd did not mount
 *     it. One refusal refuses the whole run, and nothing is touched.
 *  2. Every volume out of service (unmount, dm remove, loop detach), state
 *     volumes first. A failure (a busy mount) stops the run there. Nothing
 *     has been deleted then, and what was detached stays in the record: the
 *     next start attaches it again.
 *  3. Only with destroy_data, and only once every volume is out of
 *     service: the files layoutd created, then the record's entries (the
 *     workspaces placed on a state volume, then the volume), saved after
 *     each volume, the content pool last.
 *
 * Without destroy_data the record keeps every volume and workspace: a
 * torn-down set is what a reboot leaves, and the next start or `apply`
 * attaches all of it again (never a half: the content pool is never
 * forgotten while state volumes that reference it are kept).
 *
 * No lazy unmount unless asked: a busy volume stays mounted and the
 * processes holding it are named.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "util.h"
#include "volumes.h"

/* How many ids a refusal names before "and N more". */
#define NAMES_SHOWN 5

/* The record's volumes in teardown order: state volumes first (their
 * workspaces reference the pool), then the rest, each role by index. */
static int teardown_order(const StateRecord *record, const char *only, VolumeRecord ***ret) {
    VolumeRecord **v = calloc(record->n_volumes + 1, sizeof(*v));
    if (!v)
        return -ENOMEM;
    size_t n = 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < record->n_volumes; i++)
            if ((record->volumes[i]->role == POOL_STATE) == (pass == 0) &&
                (!only || streq(record->volumes[i]->name, only)))
                v[n++] = record->volumes[i];
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && v[j - 1]->role == v[j]->role && v[j - 1]->index > v[j]->index; j--) {
            VolumeRecord *t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    *ret = v;
    return 0;
}

static const VolumeObservation *observed(const Observation *obs, const char *name) {
    for (size_t i = 0; obs && i < obs->n; i++)
        if (streq(obs->volumes[i].name, name))
            return &obs->volumes[i];
    return NULL;
}

static bool is_state_volume(const StateRecord *record, const char *name) {
    const VolumeRecord *v = name ? state_record_find_volume(record, name) : NULL;
    return v && v->role == POOL_STATE;
}

/* Would this workspace stay in the record after the run? */
static bool stays(const StateRecord *record, const WorkspaceRecord *w, const TeardownOptions *opts) {
    if (!opts->destroy_data)
        return true;
    if (!is_state_volume(record, w->volume))
        return true; /* placed on no volume this run destroys */
    return (w->active || w->creating) && !opts->remove_workspaces;
}

/* "ws-1, ws-2 and 3 more" of the workspaces that match. */
static char *names(const StateRecord *record, bool (*match)(const WorkspaceRecord *, const void *), const void *arg,
                   size_t *ret_n) {
    char *buf = NULL;
    size_t len = 0, n = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    for (size_t i = 0; i < record->n_workspaces; i++) {
        const WorkspaceRecord *w = record->workspaces[i];
        if (!match(w, arg))
            continue;
        if (n < NAMES_SHOWN)
            fprintf(f, "%s%s", n ? ", " : "", w->id);
        n++;
    }
    if (n > NAMES_SHOWN)
        fprintf(f, " and %zu more", n - NAMES_SHOWN);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    *ret_n = n;
    return buf;
}

/* Active, or being created (its create goes on at the next start). */
static bool active_on(const WorkspaceRecord *w, const void *volume) {
    return (w->active || w->creating) && streq_ptr(w->volume, volume);
}

typedef struct StayArgs {
    const StateRecord *record;
    const TeardownOptions *opts;
} StayArgs;

static bool staying(const WorkspaceRecord *w, const void *arg) {
    const StayArgs *a = arg;
    return stays(a->record, w, a->opts);
}

static void plan_state_workspaces(PlanBuilder *b, const PlanSubject *subj, const StateRecord *record,
                                  const TeardownOptions *opts) {
    size_t n = 0;
    _cleanup_free_ char *active = names(record, active_on, subj->volume, &n);
    if (!active) {
        b->error = b->error ?: -ENOMEM;
        return;
    }
    if (n > 0 && !(opts->destroy_data && opts->remove_workspaces))
        plan_builder_refuse(b, subj, PLAN_STEP_REFUSE, "active-workspaces", true,
                            "refuse %s: %zu active workspace(s) are placed on it (%s); remove them first "
                            "(`layoutctl rm`)%s",
                            subj->volume, n, active,
                            opts->destroy_data ? ", or add --remove-workspaces to destroy them with the volume" : "");
    if (!opts->destroy_data)
        return; /* kept data stays recorded with its kept volume */
    for (size_t i = 0; i < record->n_workspaces; i++) {
        const WorkspaceRecord *w = record->workspaces[i];
        bool live = w->active || w->creating;
        if (!streq_ptr(w->volume, subj->volume) || (live && !opts->remove_workspaces))
            continue;
        plan_builder_emit(b, subj, PLAN_STEP_FORGET, live ? "forget workspace %s (its data goes with %s)"
                                                              : "forget the kept data of workspace %s (it goes with %s)",
                          w->id, subj->volume);
    }
}

int volumes_plan_teardown(const Layout *l, const StateRecord *record, const Observation *obs,
                          const TeardownOptions *opts, Plan **ret) {
    if (!l || !record || !opts || !ret)
        return -EINVAL;
    _cleanup_free_ VolumeRecord **order = NULL;
    PlanBuilder b;
    int r = teardown_order(record, opts->only, &order);
    if (r < 0)
        return r;
    if ((r = plan_builder_init(&b)) < 0)
        return r;
    for (VolumeRecord **vp = order; *vp; vp++) {
        const VolumeRecord *rec = *vp;
        const VolumeObservation *o = observed(obs, rec->name);
        const VolumeBackend *be = volume_backend_get(rec->backend);
        PlanSubject subj = { .volume = rec->name, .role = rec->role, .index = rec->index, .backend = rec->backend };
        if (!be || !be->plan_teardown) {
            plan_builder_refuse(&b, &subj, PLAN_STEP_REFUSE, "unknown-backend", true,
                                "refuse %s: its backend is unknown to this layoutd; left as is", rec->name);
            continue;
        }
        be->plan_teardown(&b, &subj, rec, o, opts);
        if (rec->role == POOL_STATE)
            plan_state_workspaces(&b, &subj, record, opts);
        else if (rec->role == POOL_CONTENT && opts->destroy_data) {
            /* Every stub of every recorded workspace points into the pool:
             * destroying it while one stays would turn their large files
             * into errors (or, in an older daemon, zeros). */
            size_t n = 0;
            StayArgs a = { record, opts };
            _cleanup_free_ char *who = names(record, staying, &a, &n);
            if (!who)
                b.error = b.error ?: -ENOMEM;
            else if (n > 0)
                plan_builder_refuse(&b, &subj, PLAN_STEP_REFUSE, "pool-referenced", true,
                                    "refuse %s: %zu workspace(s) stay recorded (%s), and their files reference the "
                                    "content pool; it is kept while any does",
                                    rec->name, n, who);
        }
        if (opts->destroy_data)
            plan_builder_emit(&b, &subj, PLAN_STEP_FORGET, "forget %s in the record", rec->name);
    }
    _cleanup_(plan_freep) Plan *plan = NULL;
    if ((r = plan_builder_finish(&b, &plan)) < 0)
        return r;
    /* In the order they run: every volume out of service (and every
     * refusal) before anything is deleted. A stable partition. */
    PlanStep *sorted = calloc(plan->n_steps ?: 1, sizeof(*sorted));
    if (!sorted)
        return -ENOMEM;
    size_t n = 0;
    for (int phase = 0; phase < 2; phase++)
        for (size_t i = 0; i < plan->n_steps; i++) {
            PlanStepKind k = plan->steps[i].kind;
            if ((k == PLAN_STEP_DELETE || k == PLAN_STEP_FORGET) == (phase == 1))
                sorted[n++] = plan->steps[i];
        }
    free(plan->steps);
    plan->steps = sorted;
    *ret = TAKE_PTR(plan);
    return 0;
}

/* The plan's first blocking refusal of volume, or NULL. */
static const PlanStep *blocking_refusal(const Plan *p, const char *volume) {
    for (size_t i = 0; i < p->n_steps; i++)
        if (!plan_step_kind_is_action(p->steps[i].kind) && p->steps[i].blocks &&
            (!volume || streq(p->steps[i].volume, volume)))
            return &p->steps[i];
    return NULL;
}

/* Every volume of the run, refused because `why` (the first volume that
 * was) stops it as a whole. */
static int refuse_all(ApplyResult *res, VolumeRecord **order, const Plan *plan, const PlanStep *why) {
    for (VolumeRecord **vp = order; *vp; vp++) {
        ApplyVolumeResult *v = apply_result_add_volume(res, (*vp)->name);
        if (!v)
            return -ENOMEM;
        const PlanStep *own = blocking_refusal(plan, (*vp)->name);
        if (own) {
            apply_volume_result_fail(v, APPLY_OUTCOME_REFUSED, -EBUSY, "%s", own->description);
            free(v->reason);
            v->reason = strdup(own->reason ?: "refused");
        } else {
            apply_volume_result_fail(v, APPLY_OUTCOME_REFUSED, -ECANCELED,
                                     "not torn down: a teardown is all or nothing, and %s was refused", why->volume);
            free(v->reason);
            v->reason = strdup("teardown-refused");
        }
    }
    return 0;
}

static VolumeSetup setup_of(const VolumesContext *c, VolumeRecord *rec, const VolumeObservation *o,
                            ApplyVolumeResult *v) {
    return (VolumeSetup) {
        .layout = c->layout,
        .pool = layout_pool(c->layout, rec->role),
        .record = c->record,
        .store = c->store,
        .observed = o,
        .result = v,
        .name = rec->name,
    };
}

static bool failed(const ApplyVolumeResult *v) {
    return v->outcome == APPLY_OUTCOME_FAILED || v->outcome == APPLY_OUTCOME_REFUSED;
}

/* Marks the volumes from vp on as not started, because of `stopper`. */
static int not_started(ApplyResult *res, VolumeRecord **vp, const char *stopper, bool deleted_any) {
    for (; *vp; vp++) {
        ApplyVolumeResult *v = apply_result_add_volume(res, (*vp)->name);
        if (!v)
            return -ENOMEM;
        apply_volume_result_fail(v, APPLY_OUTCOME_REFUSED, -ECANCELED,
                                 "not torn down: %s could not be%s; it stays in the record", stopper,
                                 deleted_any ? "" : ", and nothing was deleted");
        free(v->reason);
        v->reason = strdup("teardown-stopped");
    }
    return 0;
}

/* The record's entries of a destroyed state volume's workspaces, and
 * their (empty) mount points. */
static void forget_workspaces(const VolumesContext *c, const char *volume, const TeardownOptions *opts,
                              ApplyVolumeResult *v) {
    StateRecord *record = c->record;
    for (size_t i = record->n_workspaces; i > 0; i--) {
        WorkspaceRecord *w = record->workspaces[i - 1];
        if (!streq_ptr(w->volume, volume) || ((w->active || w->creating) && !opts->remove_workspaces))
            continue;
        _cleanup_free_ char *desc = NULL, *id = strdup(w->id);
        if (!id || asprintf(&desc, "forget workspace %s", w->id) < 0)
            return;
        ApplyStepResult *sr = apply_volume_result_add_step(v, PLAN_STEP_FORGET, desc);
        if (!sr)
            return;
        if (w->mountpoint && rmdir(w->mountpoint) < 0 && errno != ENOENT)
            apply_volume_result_note(v, "cannot remove %s: %m (left as is)", w->mountpoint);
        (void) state_record_remove_workspace(record, id);
        sr->changed = true;
    }
}

int volumes_teardown(const VolumesContext *c, const Observation *obs, const TeardownOptions *opts,
                     ApplyResult **ret) {
    if (!c || !c->layout || !c->record || !opts || !ret)
        return -EINVAL;
    _cleanup_(apply_result_freep) ApplyResult *res = NULL;
    _cleanup_(plan_freep) Plan *plan = NULL;
    _cleanup_free_ VolumeRecord **order = NULL;
    int r = apply_result_new(&res);
    if (r < 0)
        return r;
    if ((r = volumes_plan_teardown(c->layout, c->record, obs, opts, &plan)) < 0 ||
        (r = teardown_order(c->record, opts->only, &order)) < 0)
        return r;

    /* 1. Any refusal refuses the run. */
    const PlanStep *why = blocking_refusal(plan, NULL);
    if (why) {
        if ((r = refuse_all(res, order, plan, why)) < 0)
            return r;
        *ret = TAKE_PTR(res);
        return 0;
    }

    /* 2. Out of service, every one; deleting nothing yet. */
    for (VolumeRecord **vp = order; *vp; vp++) {
        ApplyVolumeResult *v = apply_result_add_volume(res, (*vp)->name);
        if (!v)
            return -ENOMEM;
        const VolumeObservation *o = observed(obs, (*vp)->name);
        VolumeSetup s = setup_of(c, *vp, o, v);
        volume_backend_get((*vp)->backend)->teardown(&s, o, opts);
        volume_setup_done(&s);
        if (failed(v)) {
            if ((r = not_started(res, vp + 1, (*vp)->name, false)) < 0)
                return r;
            *ret = TAKE_PTR(res);
            return 0;
        }
        if (!opts->destroy_data)
            apply_volume_result_note(v, "kept in the record with its files: the next start (or `layoutctl apply`) "
                                        "attaches it again; `teardown --destroy-data` deletes it");
        v->outcome = APPLY_OUTCOME_CHANGED;
    }
    if (!opts->destroy_data) {
        *ret = TAKE_PTR(res);
        return 0;
    }

    /* 3. Destroyed, state volumes first, the record saved after each:
     * a crash mid-way must not leave it claiming what is gone. */
    for (VolumeRecord **vp = order; *vp; vp++) {
        ApplyVolumeResult *v = (ApplyVolumeResult *) apply_result_find(res, (*vp)->name);
        const VolumeObservation *o = observed(obs, (*vp)->name);
        VolumeSetup s = setup_of(c, *vp, o, v);
        volume_backend_get((*vp)->backend)->destroy(&s, o);
        volume_setup_done(&s);
        if (failed(v)) {
            /* The rest stays whole: the content pool comes last. */
            if ((r = not_started(res, vp + 1, (*vp)->name, true)) < 0)
                return r;
            break;
        }
        _cleanup_free_ char *name = strdup((*vp)->name), *desc = NULL;
        if (!name || asprintf(&desc, "forget %s in the record", name) < 0)
            return -ENOMEM;
        if ((*vp)->role == POOL_STATE)
            forget_workspaces(c, name, opts, v);
        ApplyStepResult *sr = apply_volume_result_add_step(v, PLAN_STEP_FORGET, desc);
        if (!sr)
            return -ENOMEM;
        /* Frees *vp; the loop only looks at the entries after it. */
        (void) state_record_remove_volume(c->record, name);
        r = record_store_save(c->store, c->record, name);
        if (r < 0) {
            sr->error = r;
            apply_volume_result_fail(v, APPLY_OUTCOME_FAILED, r, "cannot save the record: %s", strerror(-r));
            break;
        }
        sr->changed = true;
    }
    *ret = TAKE_PTR(res);
    return 0;
}
