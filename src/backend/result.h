/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What carrying out a plan (or a teardown, a repair) did, volume by
 * volume and step by step: every step says whether it changed something
 * (stratisd's Identity vs Created), so a second apply of the same layout
 * visibly changes nothing. Crosses the worker boundary as JSON.
 */

#include <stdbool.h>

#include <json-c/json.h>

#include "plan.h"

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
    char *reason;            /* the plan's reason code of a refusal ("foreign-signature"), or NULL */
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
/* An empty result. Returns 0 or -ENOMEM. */
int apply_result_new(ApplyResult **ret);
/* True when no volume FAILED or was REFUSED, and no step failed (a grow
 * that failed leaves its volume in service, but is not "ok"). */
bool apply_result_ok(const ApplyResult *r);
const ApplyVolumeResult *apply_result_find(const ApplyResult *r, const char *volume);

/* Appends a zeroed (UNCHANGED) volume result for name; NULL on -ENOMEM. */
ApplyVolumeResult *apply_result_add_volume(ApplyResult *r, const char *name);
/* Moves every volume of *from into r, replacing r's entries of the same
 * volume; *from is freed and set to NULL. Returns 0 or -ENOMEM. */
int apply_result_merge(ApplyResult *r, ApplyResult **from);
/* Appends a step result; NULL on -ENOMEM. */
ApplyStepResult *apply_volume_result_add_step(ApplyVolumeResult *v, PlanStepKind kind, const char *description);
/* Sets the volume's first failure (keeps an earlier one). */
_printf_(4, 5) void apply_volume_result_fail(ApplyVolumeResult *v, ApplyOutcome outcome, int error,
                                             const char *fmt, ...);
/* Adds a note. */
_printf_(2, 3) void apply_volume_result_note(ApplyVolumeResult *v, const char *fmt, ...);
/* Sets a step's message. */
_printf_(2, 3) void apply_step_result_message(ApplyStepResult *s, const char *fmt, ...);

/* {"ok": bool, "volumes": [{volume, outcome, error, message, reason,
 * rolled_back, notes, steps: [...]}]}; from_json reads it back.
 * Return 0, -ENOMEM, -EBADMSG. */
int apply_result_to_json(const ApplyResult *r, json_object **ret);
int apply_result_from_json(json_object *j, ApplyResult **ret);
int apply_result_to_json_string(const ApplyResult *r, char **ret);
/* Lines "  state-0  changed\n    + attach ... changed" for a terminal. */
int apply_result_to_text(const ApplyResult *r, char **ret);
