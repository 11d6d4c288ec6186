/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* Shared between apply.c, teardown.c and repair.c; not exported. */

#include "apply.h"

/* Appends a zeroed volume result for name; NULL on -ENOMEM. */
ApplyVolumeResult *apply_result_add_volume(ApplyResult *r, const char *name);
/* Appends a step result; NULL on -ENOMEM. */
ApplyStepResult *apply_volume_result_add_step(ApplyVolumeResult *v, PlanStepKind kind, const char *description);
/* Sets the volume's first failure (keeps an earlier one). */
void apply_volume_result_fail(ApplyVolumeResult *v, ApplyOutcome outcome, int error, const char *fmt, ...)
        _printf_(4, 5);
/* Adds a note. */
void apply_volume_result_note(ApplyVolumeResult *v, const char *fmt, ...) _printf_(2, 3);
/* Sets a step's message. */
void apply_step_result_message(ApplyStepResult *s, const char *fmt, ...) _printf_(2, 3);

/* Saves the record; the caller words the error. */
int apply_save_record(StateRecord *record, const char *record_path);
