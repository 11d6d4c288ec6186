/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The drivers over the backend table: observe every volume, plan every
 * volume, carry a plan out volume by volume with undo, tear volumes down,
 * repair the safe drift cases. They know the rules every backend shares
 * (which volumes exist, the record is saved through a RecordStore, a
 * failure rolls back only that volume, the others go on) and call the
 * backend for everything else.
 *
 * Library code: never prints; errors and notes are in the ApplyResult.
 */

#include "backend.h"
#include "record-store.h"
#include "result.h"

/* What the changing drivers work with. */
typedef struct VolumesContext {
    const Layout *layout;
    StateRecord *record;
    RecordStore *store;          /* where each change of a volume's entry goes */
    /* Optional: told when a step begins (done = false) and ends. */
    void (*progress)(void *userdata, const char *volume, const ApplyStepResult *step, bool done);
    void *userdata;
} VolumesContext;

/* Observes every volume of volume_spec_list_compute(l, record) through
 * its backend, and the free space where backing files live.
 * Returns: -ENOMEM, -EINVAL, 0 with *ret. */
int volumes_observe(const Layout *l, const StateRecord *record, Observation **ret);

/* Observes one volume (name) as volumes_observe would. Returns -ENOENT
 * when the layout and the record know no such volume. */
int volumes_observe_one(const Layout *l, const StateRecord *record, const char *name, VolumeObservation *ret);

/* Refreshes o's view of the free space where backing files live. */
void volumes_observe_backing_free(const Layout *l, Observation *o);

/*
 * The plan for every observed volume (pure: reads its arguments only).
 * The rules shared by every backend are here: an undeclared volume in the
 * record is drift, a volume made with another backend is refused (never
 * converted); the rest is the backend's plan op.
 * record may be NULL (= empty).
 * Returns: -ENOMEM, -EINVAL, 0 with *ret (possibly with no steps).
 */
int volumes_plan(const Layout *l, const StateRecord *record, const Observation *obs, Plan **ret);

/* The plan that grows `volume` to new_size bytes (pure), or refuses it.
 * Returns: -ENOENT (not observed), -ENOMEM, 0 with *ret. */
int volumes_plan_grow(const Layout *l, const StateRecord *record, const Observation *obs, const char *volume,
                      uint64_t new_size, Plan **ret);

/*
 * Carries out plan against c->record, saving it through c->store whenever a
 * volume's entry changes. obs (may be NULL) is what the plan was made
 * from: volumes it lists get an UNCHANGED entry when the plan has nothing
 * for them. Per-volume failures are in *ret, not in the return value.
 * Returns: -ENOMEM, -EINVAL, 0 with *ret.
 */
int volumes_apply(const VolumesContext *c, const Plan *plan, const Observation *obs, ApplyResult **ret);

/*
 * The teardown of every volume the record lists, planned (pure): per
 * volume its steps (UNMOUNT, DM_REMOVE, DETACH; with destroy_data DELETE
 * and FORGET) in the order they run, state volumes first, and blocking
 * REFUSE entries: active workspaces on a state volume (unless
 * destroy_data and remove_workspaces), the content pool to be destroyed
 * while any workspace stays recorded, a device mounted elsewhere. One
 * blocking refusal means volumes_teardown() changes nothing.
 * Returns: -ENOMEM, -EINVAL, 0 with *ret.
 */
int volumes_plan_teardown(const Layout *l, const StateRecord *record, const Observation *obs,
                          const TeardownOptions *opts, Plan **ret);

/*
 * Tears down every volume the record lists (never anything else), all or
 * nothing: refused as a whole when the plan refuses any volume; then
 * every volume out of service (a failure stops there, nothing deleted);
 * then, with destroy_data only, each one's files and record entries (its
 * workspaces' too), saved after each volume, the content pool last.
 * Without destroy_data the record keeps everything, so the next apply
 * attaches the whole set again. Per-volume outcomes are in *ret.
 * Returns: -ENOMEM, -EINVAL, 0 with *ret.
 */
int volumes_teardown(const VolumesContext *c, const Observation *obs, const TeardownOptions *opts,
                     ApplyResult **ret);

typedef struct RepairOptions {
    bool forget_missing;     /* forget volumes whose formatted backing file is gone */
} RepairOptions;

/*
 * Resolves the safe drift cases of plan (docs/volumes.md, "Drift and
 * repair"): forget a volume whose backing file was deleted (only with
 * forget_missing), mount at its own path a volume that was mounted by hand
 * elsewhere (same filesystem), record our own UUID found after an
 * interrupted mkfs. Unsafe cases are REFUSED with the reason.
 * Returns: -ENOMEM, -EINVAL, 0 with *ret.
 */
int volumes_repair(const VolumesContext *c, const Plan *plan, const Observation *obs, const RepairOptions *opts,
                   ApplyResult **ret);
