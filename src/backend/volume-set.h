/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The set of volumes the engine looks after: every volume the layout
 * declares (state pool: state-0..state-(min_volumes-1); content pool:
 * content-0..content-(shards-1)) plus every volume the record lists (state
 * volumes carved on demand beyond min_volumes, and volumes the layout no
 * longer declares, which are reported, never silently dropped).
 * Pure: reads the layout and the record only.
 */

#include <stdbool.h>

#include "layout.h"
#include "state.h"

typedef struct VolumeSpec {
    char *name;             /* "state-0" */
    PoolRole role;
    unsigned index;
    Backend backend;        /* the layout's, or the record's if undeclared */
    const Pool *pool;       /* the layout's pool for the role, NULL if undeclared */
    bool declared;          /* the layout asks for this volume (or it is an
                               on-demand state volume below max_volumes) */
    const VolumeRecord *record; /* NULL: not in the record */
} VolumeSpec;

typedef struct VolumeSpecList {
    VolumeSpec *items;
    size_t n;
} VolumeSpecList;

/* Fills *ret (caller zero-initialises it; free with volume_spec_list_done).
 * Order: state volumes by index, then content volumes by index.
 * Returns: -ENOMEM, -EINVAL, 0. */
int volume_spec_list_compute(const Layout *l, const StateRecord *record, VolumeSpecList *ret);
void volume_spec_list_done(VolumeSpecList *list);
