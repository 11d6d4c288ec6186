/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The vdo-xfs step of apply (src/apply's ApplyVdoHandler hook): record the
 * intent, bring the block layer up (vdo-volume.h), mkfs.xfs -K on a blank
 * VDO device this agent formatted, mount without `discard`. Whoever runs
 * apply (layoutctl, the agent) calls vdo_apply_register() once.
 */

#include <stdbool.h>

#include "apply.h"

/* The ApplyVdoHandler. Returns: <0 on error (what this call made is undone;
 * *ret_message says why), 0 (*ret_changed says whether anything changed). */
int vdo_apply_handler(const Layout *l, const PlanStep *step, StateRecord *record, const char *record_path,
                      bool *ret_changed, char **ret_message, void *userdata);

/* The ApplyVdoTeardownHandler: unmounts the volume when its mount is of our
 * dm device (a busy mount names its holders; MNT_DETACH only with lazy),
 * then vdo_volume_down() (dm remove, loop detach). The backing file stays.
 * Returns: -EBUSY (busy mount, or the dm device still open), -errno, 0. */
int vdo_teardown_handler(const VolumeObservation *o, const VolumeRecord *rec, bool lazy, bool *ret_changed,
                         char **ret_message, void *userdata);

/* apply_set_vdo_handler(vdo_apply_handler, NULL) and
 * apply_set_vdo_teardown_handler(vdo_teardown_handler, NULL). */
void vdo_apply_register(void);
