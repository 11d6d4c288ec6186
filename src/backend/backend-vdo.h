/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* vdo-xfs: the two files of the backend (backend-vdo.c, backend-vdo-plan.c)
 * share these; the table entry is in backends.c. */

#include "backend.h"

void vdo_backend_plan(PlanBuilder *b, const PlanSubject *subj, const Pool *p, const VolumeRecord *rec,
                      const VolumeObservation *o);
void vdo_backend_plan_grow(PlanBuilder *b, const PlanSubject *subj, const Pool *p, const VolumeRecord *rec,
                           const VolumeObservation *o, uint64_t new_size);
void vdo_backend_plan_teardown(PlanBuilder *b, const PlanSubject *subj, const VolumeRecord *rec,
                               const VolumeObservation *o, const TeardownOptions *opts);
extern const VolumeBackend vdo_xfs_backend;
