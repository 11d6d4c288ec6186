/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Internals shared by the files of src/place/; not for other modules. */

#include "place-policy.h"
#include "place-workspaces.h"

/* Sets error (if not NULL) to reason + formatted message; returns r. */
int place_fail(PlaceError *error, int r, PlaceReason reason, const char *fmt, ...) _printf_(4, 5);

/* Observes v with c->observe or the default. */
int place_observe(PlaceContext *c, const VolumeRecord *v, PlaceVolumeObservation *ret);

/*
 * The state pool's volumes as policy candidates, counting active
 * workspaces and their tenants in one pass over the record (O(W log V)).
 * Strings borrow from the record. Returns -ENOMEM or 0.
 */
int place_state_candidates(PlaceContext *c, PlaceCandidate **ret, size_t *ret_n);

/* Saves c->record to c->record_path (no-op without a path). */
int place_save(PlaceContext *c);


