/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Apply: carries out a plan (plan.h) volume by volume, and the inverse
 * (teardown) and the safe drift resolutions (repair).
 *
 * Each volume runs in its own setup record (in the style of systemd's
 * HomeSetup: undo_file, undo_loop, undo_mount, undo_record): a failure
 * half-way rolls THAT volume back (a file we just created is deleted, a loop
 * we attached is detached, a mount we made is unmounted) and the other
 * volumes go on. Each step says whether it changed something.
 *
 * The record is saved atomically at every point where a crash would
 * otherwise leave something we could not recognise later: before creating a
 * backing file (intent), before mkfs (the UUID we are about to write), after
 * mkfs (formatted = true, BEFORE mounting).
 *
 * Library code: never prints; errors and notes are in the result.
 */

#include <stdbool.h>

#include "layout.h"
#include "observe.h"
#include "plan.h"
#include "state.h"

typedef enum ApplyOutcome {
    APPLY_OUTCOME_UNCHANGED,  /* nothing needed doing */
    APPLY_OUTCOME_CHANGED,    /* every step done */
    APPLY_OUTCOME_REFUSED,    /* the plan refused it / drift keeps it out of service */
    APPLY_OUTCOME_FAILED,     /* a step failed; what this run did was rolled back */
    _APPLY_OUTCOME_MAX,
    _APPLY_OUTCOME_INVALID = -EINVAL,
} ApplyOutcome;

const char *apply_outcome_to_string(ApplyOutcome o);
ApplyOutcome apply_outcome_from_string(const char *s);

typedef struct ApplyStepResult {
    PlanStepKind kind;
    char *description;       /* the plan's, or the teardown/repair step's */
    bool changed;            /* false: already so when we got there */
    int error;               /* 0 or -errno */
    char *message;           /* why it failed, or a note ("direct I/O refused: buffered") */
} ApplyStepResult;

typedef struct ApplyVolumeResult {
    char *volume;
    ApplyOutcome outcome;
    int error;               /* the first failure, 0 if none */
    char *message;           /* the first failure / refusal, worded for an operator */
    bool rolled_back;        /* a failure undid this run's changes */
    char **notes;            /* non-fatal: DIO fallback, shrink refused, holders... */
    ApplyStepResult *steps;
    size_t n_steps;
} ApplyVolumeResult;

typedef struct ApplyResult {
    ApplyVolumeResult *volumes;
    size_t n_volumes;
} ApplyResult;

ApplyResult *apply_result_free(ApplyResult *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(ApplyResult *, apply_result_free)
/* True when no volume FAILED or was REFUSED. */
bool apply_result_ok(const ApplyResult *r);
/* JSON text: {"ok": bool, "volumes": [{volume, outcome, error, message, steps: [...]}]}. */
int apply_result_to_json_string(const ApplyResult *r, char **ret);
/* Lines "  state-0  changed\n    + attach ... changed" for a terminal. */
int apply_result_to_text(const ApplyResult *r, char **ret);

/*
 * vdo-xfs volumes are set up by src/vdo. The VDO engine registers a handler;
 * without one, PLAN_STEP_VDO fails with -EOPNOTSUPP ("vdo-xfs is handled by
 * src/vdo"). The handler gets the step and the record (it saves it itself
 * at record_path), sets *ret_changed, and may set *ret_message (malloc'd).
 * Returns: <0 on error (the handler rolled back its own half-made state).
 */
typedef int (*ApplyVdoHandler)(const Layout *l, const PlanStep *step, StateRecord *record, const char *record_path,
                               bool *ret_changed, char **ret_message, void *userdata);
void apply_set_vdo_handler(ApplyVdoHandler handler, void *userdata);

/*
 * Carries out plan against the record (which is saved at record_path
 * whenever it changes). obs, if not NULL, lists volumes that get an
 * UNCHANGED entry when the plan has nothing for them.
 * Per-volume failures are in *ret, not in the return value.
 * Returns: -ENOMEM, -EINVAL, 0 with *ret.
 */
int apply_plan(const Layout *l, const Plan *plan, const Observation *obs, StateRecord *record, const char *record_path,
               ApplyResult **ret);

typedef struct TeardownOptions {
    bool destroy_data;       /* also delete backing files, mount dirs, the record */
    bool lazy;               /* MNT_DETACH when the unmount stays busy */
} TeardownOptions;

/*
 * vdo-xfs teardown is src/vdo's too: the handler unmounts the volume (its
 * mount is of the dm device, not of the loop device) and takes the block
 * layer down (dm remove, loop detach); the backing file stays, teardown
 * deletes it afterwards only with destroy_data. Without a handler, teardown
 * leaves vdo-xfs volumes as they are (REFUSED). *ret_changed: something was
 * unmounted or taken down; *ret_message (malloc'd) says what or why not.
 * Returns: <0 on error (-EBUSY: still mounted or open).
 */
typedef int (*ApplyVdoTeardownHandler)(const VolumeObservation *o, const VolumeRecord *rec, bool lazy,
                                       bool *ret_changed, char **ret_message, void *userdata);
void apply_set_vdo_teardown_handler(ApplyVdoTeardownHandler handler, void *userdata);

/*
 * Tears down every volume that the record lists (never anything else):
 * unmount (bounded retries; holders reported), detach, forget it in the
 * record; files are kept unless destroy_data. The record file is deleted
 * once it lists nothing. A volume that cannot be torn down stays in the
 * record (and mounted), the others go on.
 * Returns: -ENOMEM, -EINVAL, 0 with *ret.
 */
int apply_teardown(const Layout *l, const Observation *obs, StateRecord *record, const char *record_path,
                   const TeardownOptions *opts, ApplyResult **ret);

typedef struct RepairOptions {
    bool forget_missing;     /* forget volumes whose formatted backing file is gone */
} RepairOptions;

/*
 * Resolves the safe drift cases of plan (see docs/volumes.md, "Drift and
 * repair"): forget a volume whose backing file was deleted (only with
 * forget_missing), mount at its own path a volume that was mounted by hand
 * elsewhere (same filesystem, UUID checked), and records our own UUID found
 * after an interrupted mkfs. Unsafe cases (a changed UUID, a foreign or lost
 * signature, a busy mount path) are REFUSED with the reason.
 * Returns: -ENOMEM, -EINVAL, 0 with *ret.
 */
int apply_repair(const Layout *l, const Plan *plan, const Observation *obs, StateRecord *record,
                 const char *record_path, const RepairOptions *opts, ApplyResult **ret);

/* Generates a random (v4) UUID string, lower case. Returns 0 / -ENOMEM. */
int apply_generate_uuid(char **ret);

/* Finds an executable in $PATH (or the default PATH when unset).
 * Returns: -ENOENT, -ENOMEM, 0 with *ret an absolute path. */
int apply_find_program(const char *name, char **ret);
