/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Flush scope reporting: which workspaces one syncfs(2) on a volume makes
 * wait. Plain structs with their own copies of the strings, so the API
 * layer can turn them into JSON after the record has moved on.
 */

#include <stdbool.h>
#include <stddef.h>

#include "state.h"

typedef struct PlaceVolumeScope {
    char *volume;          /* "state-2" */
    unsigned index;
    char *tenant;          /* tenant of its workspaces ("" = none); NULL when
                              it has none or several (mixed_tenants) */
    bool mixed_tenants;
    char **workspaces;     /* active workspace ids, sorted; never NULL */
    size_t n_workspaces;   /* = the volume's flush scope size */
    size_t n_kept;         /* inactive workspaces with data kept on it */
    unsigned bound;        /* workspaces_per_volume */
} PlaceVolumeScope;

typedef struct PlaceWorkspaceScope {
    char *id;
    char *volume;          /* NULL when the record lost its volume */
    char **neighbours;     /* other active workspaces on that volume, sorted */
    size_t n_neighbours;   /* its flush scope is n_neighbours + 1 */
} PlaceWorkspaceScope;

typedef struct PlaceFlushScope {
    PlaceVolumeScope *volumes;       /* state volumes, by index */
    size_t n_volumes;
    PlaceWorkspaceScope *workspaces; /* active workspaces, by id */
    size_t n_workspaces;
} PlaceFlushScope;

/*
 * Computes the flush scopes of every state volume and active workspace.
 * `bound` is copied into each volume entry (the layout's
 * workspaces_per_volume; 0 if unknown). Returns: -ENOMEM, 0.
 */
int place_flush_scope(const StateRecord *s, unsigned bound, PlaceFlushScope *ret);
void place_flush_scope_done(PlaceFlushScope *f);
