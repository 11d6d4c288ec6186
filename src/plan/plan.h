/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Plan: the ordered steps that would make what is observed match the
 * layout. This module holds the vocabulary (step kinds, the Plan, a
 * builder, renderings) and nothing else: it is pure and knows no backend.
 * Each backend's planner (src/backend/backend-*-plan.c) emits its steps
 * through the builder; src/backend/backend-plan.c runs them over every
 * volume.
 *
 * Besides the steps that change something, a plan carries REFUSE and DRIFT
 * entries that explain what will NOT be done, and why (a foreign
 * signature, a shrink, a deleted backing file...). A plan without action
 * steps means "nothing to do".
 */

#include <stdbool.h>
#include <stdint.h>

#include "layout.h"

typedef enum PlanStepKind {
    PLAN_STEP_CREATE_FILE,  /* sparse backing file (ftruncate), recorded first */
    PLAN_STEP_CREATE_DIR,   /* dir backend: <root>/volumes/<vol> */
    PLAN_STEP_DETACH,       /* detach a buffered loop (unmounted) to re-attach with DIO */
    PLAN_STEP_ATTACH,       /* loop device, direct I/O as the pool asks */
    PLAN_STEP_VDO_FORMAT,   /* vdoformat the (blank, ours) storage */
    PLAN_STEP_DM_CREATE,    /* create the dm-vdo target on the storage */
    PLAN_STEP_FORMAT,       /* mkfs with our UUID and label */
    PLAN_STEP_ADOPT,        /* complete the record: our UUID found on the volume */
    PLAN_STEP_MOUNT,
    PLAN_STEP_GROW,         /* extend the storage, refresh the device, grow the fs online */
    PLAN_STEP_SET_LIMITS,   /* bdi writeback limits */
    PLAN_STEP_IDENTIFY,     /* write the identity file at the volume's root
                               (identity.h), recorded first */
    /* Teardown (volumes_plan_teardown): taking a volume out of service, */
    PLAN_STEP_UNMOUNT,      /* unmount the volume's filesystem */
    PLAN_STEP_DM_REMOVE,    /* remove the dm-vdo target, detach its loop */
    /* and, with --destroy-data only, once every volume is out of service: */
    PLAN_STEP_DELETE,       /* delete the backing file / the directory layoutd made */
    PLAN_STEP_FORGET,       /* drop a volume or workspace from the record */
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
    char *path;             /* backing file (CREATE_FILE, ATTACH, VDO_FORMAT,
                               DM_CREATE, FORMAT, GROW), loop node (DETACH),
                               or the directory (CREATE_DIR, ADOPT of dir) */
    char *mount_path;       /* MOUNT, GROW */
    uint64_t size;          /* CREATE_FILE, GROW: the new size; VDO_FORMAT:
                               the logical size */
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

Plan *plan_free(Plan *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Plan *, plan_free)

/* Number of action steps (0 = nothing to do). */
size_t plan_count_actions(const Plan *p);
/* True if the plan has any REFUSE or DRIFT entry. */
bool plan_has_problems(const Plan *p);
/* True if the plan has a REFUSE/DRIFT entry with this reason code. */
bool plan_has_reason(const Plan *p, const char *volume, const char *reason);

/* Keeps only the steps of `volume` (in their order); frees the others. */
void plan_keep_volume(Plan *p, const char *volume);

/* JSON text: {"steps":[{"volume","kind","description",...}], "actions": N}. */
int plan_to_json_string(const Plan *p, char **ret);
/* Diff-like text, one line per step: "+ create ...", "~ grow ...",
 * "! refuse ...", "? drift ...". "No changes." when empty. */
int plan_to_text(const Plan *p, char **ret);

/* The label layoutd gives a volume: "ld-<volume>", shortened to
 * "ld-<role initial><index>" when longer than the fs allows (its FsType's
 * label_max: ext4 16, XFS 12). Returns 0 / -ENOMEM / -EINVAL (a fs_type
 * that is not in the table). */
int plan_volume_label(const char *fs_type, PoolRole role, unsigned index, const char *volume, char **ret);

/* ---- building (for the backends' planners) ---------------------------- */

/* Whom the steps are for: copied into every step emitted. */
typedef struct PlanSubject {
    const char *volume;
    PoolRole role;
    unsigned index;
    Backend backend;
} PlanSubject;

/* A plan being built. An allocation failure sticks in `error`: every later
 * call does nothing, and plan_builder_finish() reports it. */
typedef struct PlanBuilder {
    Plan *plan;
    int error;
} PlanBuilder;

/* Starts an empty plan. Returns 0 or -ENOMEM. */
int plan_builder_init(PlanBuilder *b);
/* Appends an action step; the description is a format string. Returns the
 * step to fill in its parameters (with plan_builder_set), or NULL after an
 * error. */
_printf_(4, 5) PlanStep *plan_builder_emit(PlanBuilder *b, const PlanSubject *s, PlanStepKind kind,
                                           const char *fmt, ...);
/* Appends a REFUSE or DRIFT entry with its reason code; `blocks`: the
 * volume stays out of service (false for a note such as a refused
 * shrink). Returns the step or NULL after an error. */
_printf_(6, 7) PlanStep *plan_builder_refuse(PlanBuilder *b, const PlanSubject *s, PlanStepKind kind,
                                             const char *reason, bool blocks, const char *fmt, ...);
/* *field = strdup(value) (NULL stays NULL). */
void plan_builder_set(PlanBuilder *b, char **field, const char *value);
/* Hands the plan over. Returns: the sticky error (the plan is freed), or
 * 0 with *ret. */
int plan_builder_finish(PlanBuilder *b, Plan **ret);

/* Human size ("256MiB") into a buffer of at least 32 bytes; returns buf. */
const char *plan_format_size(char buf[static 32], uint64_t bytes);
