/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Plan: the ordered steps that would make what is observed match the
 * layout, computed by a PURE function of (layout, record, observation).
 * Nothing here touches a device. Besides the steps that change something,
 * a plan carries REFUSE and DRIFT entries that explain what will NOT be
 * done, and why (a foreign signature, a shrink, a deleted backing file...).
 * A plan without action steps means "nothing to do".
 *
 * Safety rules encoded here (docs/volumes.md):
 *  - FORMAT only a blank volume whose backing file the record says this
 *    agent created, and which the record does not already call formatted;
 *  - never format over any signature, not even our own fs type with another
 *    UUID; a recorded volume whose UUID changed is refused, not "fixed";
 *  - grow, never shrink.
 */

#include <stdbool.h>
#include <stdint.h>

#include "layout.h"
#include "observe.h"
#include "state.h"

typedef enum PlanStepKind {
    PLAN_STEP_CREATE_FILE,  /* sparse backing file (ftruncate), recorded first */
    PLAN_STEP_CREATE_DIR,   /* dir backend: <root>/volumes/<vol> */
    PLAN_STEP_DETACH,       /* detach a buffered loop (unmounted) to re-attach with DIO */
    PLAN_STEP_ATTACH,       /* loop device, direct I/O as the pool asks */
    PLAN_STEP_FORMAT,       /* mkfs with our UUID and label */
    PLAN_STEP_ADOPT,        /* complete the record: our UUID found on the volume */
    PLAN_STEP_MOUNT,
    PLAN_STEP_GROW,         /* extend the file, LOOP_SET_CAPACITY, grow the fs online */
    PLAN_STEP_SET_LIMITS,   /* bdi writeback limits */
    PLAN_STEP_VDO,          /* vdo-xfs: handed to src/vdo (apply hook) */
    PLAN_STEP_REFUSE,       /* will not be done (no change) */
    PLAN_STEP_DRIFT,        /* record and reality disagree (no change) */
    _PLAN_STEP_KIND_MAX,
    _PLAN_STEP_KIND_INVALID = -EINVAL,
} PlanStepKind;

const char *plan_step_kind_to_string(PlanStepKind k);
PlanStepKind plan_step_kind_from_string(const char *s);
/* True for kinds that change something (not REFUSE / DRIFT). */
bool plan_step_kind_is_action(PlanStepKind k);

typedef struct PlanStep {
    PlanStepKind kind;
    char *volume;           /* "state-0" */
    char *description;      /* what it changes, or why not */
    /* Parameters, by kind (unused ones are 0/NULL): */
    PoolRole role;
    unsigned index;
    Backend backend;
    char *path;             /* backing file (CREATE_FILE, ATTACH, GROW, FORMAT) or dir */
    char *mount_path;       /* MOUNT, GROW */
    uint64_t size;          /* CREATE_FILE, GROW: the new size */
    uint64_t old_size;      /* GROW */
    bool direct_io;         /* ATTACH */
    char *fs_type;          /* FORMAT, MOUNT, GROW, ADOPT */
    char *fs_uuid;          /* ADOPT: the UUID found */
    char *reason;           /* REFUSE/DRIFT: a short machine-readable code
                               ("foreign-signature", "shrink", ...) */
    bool blocks;            /* REFUSE/DRIFT: the volume is left out of
                               service (false: a note, e.g. "shrink") */
} PlanStep;

typedef struct Plan {
    PlanStep *steps;
    size_t n_steps;
} Plan;

/*
 * Computes the plan. Pure: reads its arguments only.
 * record may be NULL (= empty).
 * Returns: -ENOMEM, -EINVAL, 0 with *ret (possibly with no steps).
 */
int plan_compute(const Layout *l, const StateRecord *record, const Observation *obs, Plan **ret);

Plan *plan_free(Plan *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Plan *, plan_free)

/* Number of action steps (0 = nothing to do). */
size_t plan_count_actions(const Plan *p);
/* True if the plan has any REFUSE or DRIFT entry. */
bool plan_has_problems(const Plan *p);

/* JSON text: {"steps":[{"volume","kind","description",...}], "actions": N}. */
int plan_to_json_string(const Plan *p, char **ret);
/* Diff-like text, one line per step: "+ create ...", "~ grow ...",
 * "! refuse ...", "? drift ...". "No changes." when empty. */
int plan_to_text(const Plan *p, char **ret);

/* The label layoutd gives a volume: "ld-<volume>", shortened to
 * "ld-<role initial><index>" when longer than the fs allows (ext4: 16,
 * xfs: 12). Returns 0 / -ENOMEM / -EINVAL. */
int plan_volume_label(const char *fs_type, PoolRole role, unsigned index, const char *volume, char **ret);
