/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* The loop backends: the two files of the backend (backend-loop.c,
 * backend-loop-plan.c) share these; the table entries are in backends.c. */

#include "backend.h"

void loop_backend_plan(PlanBuilder *b, const PlanSubject *subj, const Pool *p, const VolumeRecord *rec,
                       const VolumeObservation *o);
void loop_backend_plan_grow(PlanBuilder *b, const PlanSubject *subj, const Pool *p, const VolumeRecord *rec,
                            const VolumeObservation *o, uint64_t new_size);
void loop_backend_plan_teardown(PlanBuilder *b, const PlanSubject *subj, const VolumeRecord *rec,
                                const VolumeObservation *o, const TeardownOptions *opts);
extern const VolumeBackend loop_backend;
