/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>

#include "place-scope.h"
#include "util.h"

void place_flush_scope_done(PlaceFlushScope *f) {
    if (!f)
        return;
    for (size_t i = 0; i < f->n_volumes; i++) {
        free(f->volumes[i].volume);
        free(f->volumes[i].tenant);
        strv_free(f->volumes[i].workspaces);
    }
    free(f->volumes);
    for (size_t i = 0; i < f->n_workspaces; i++) {
        free(f->workspaces[i].id);
        free(f->workspaces[i].volume);
        strv_free(f->workspaces[i].neighbours);
    }
    free(f->workspaces);
    *f = (PlaceFlushScope) {};
}

static int volume_ptr_compare(const void *a, const void *b) {
    const VolumeRecord *x = *(VolumeRecord *const *) a, *y = *(VolumeRecord *const *) b;
    return x->index < y->index ? -1 : x->index > y->index ? 1 : strcmp(x->name, y->name);
}

static int workspace_ptr_compare(const void *a, const void *b) {
    const WorkspaceRecord *x = *(WorkspaceRecord *const *) a, *y = *(WorkspaceRecord *const *) b;
    return strcmp(x->id, y->id);
}

static PlaceVolumeScope *find_volume(PlaceFlushScope *f, const char *name) {
    if (!name)
        return NULL;
    for (size_t i = 0; i < f->n_volumes; i++)
        if (streq(f->volumes[i].volume, name))
            return &f->volumes[i];
    return NULL;
}

static int strdup_or_null(const char *s, char **ret) {
    *ret = NULL;
    if (s && !(*ret = strdup(s)))
        return -ENOMEM;
    return 0;
}

int place_flush_scope(const StateRecord *s, unsigned bound, PlaceFlushScope *ret) {
    if (!s || !ret)
        return -EINVAL;
    _cleanup_(place_flush_scope_done) PlaceFlushScope f = {};
    _cleanup_free_ VolumeRecord **vols = calloc(s->n_volumes ?: 1, sizeof(VolumeRecord *));
    _cleanup_free_ WorkspaceRecord **ws = calloc(s->n_workspaces ?: 1, sizeof(WorkspaceRecord *));
    size_t nv = 0, nw = 0;
    int r;

    if (!vols || !ws)
        return -ENOMEM;
    for (size_t i = 0; i < s->n_volumes; i++)
        if (s->volumes[i]->role == POOL_STATE && s->volumes[i]->name)
            vols[nv++] = s->volumes[i];
    for (size_t i = 0; i < s->n_workspaces; i++)
        if (s->workspaces[i]->id)
            ws[nw++] = s->workspaces[i];
    qsort(vols, nv, sizeof(VolumeRecord *), volume_ptr_compare);
    qsort(ws, nw, sizeof(WorkspaceRecord *), workspace_ptr_compare);

    f.volumes = calloc(nv ?: 1, sizeof(PlaceVolumeScope));
    f.workspaces = calloc(nw ?: 1, sizeof(PlaceWorkspaceScope));
    if (!f.volumes || !f.workspaces)
        return -ENOMEM;
    for (size_t i = 0; i < nv; i++) {
        PlaceVolumeScope *vs = &f.volumes[f.n_volumes++];
        vs->index = vols[i]->index;
        vs->bound = bound;
        if (!(vs->volume = strdup(vols[i]->name)) || !(vs->workspaces = calloc(1, sizeof(char *))))
            return -ENOMEM;
    }

    /* Volume lists, in id order since ws is sorted. Volumes are few (a few
     * hundred at most), so the linear find is fine for a report. */
    for (size_t i = 0; i < nw; i++) {
        const WorkspaceRecord *w = ws[i];
        PlaceVolumeScope *vs = find_volume(&f, w->volume);
        if (!vs)
            continue;
        if (!w->active) {
            vs->n_kept++;
            continue;
        }
        const char *t = w->tenant ?: "";
        if (vs->n_workspaces == 0) {
            if (!(vs->tenant = strdup(t)))
                return -ENOMEM;
        } else if (vs->tenant && !streq(vs->tenant, t)) {
            vs->mixed_tenants = true;
            free(vs->tenant);
            vs->tenant = NULL;
        }
        r = strv_extend(&vs->workspaces, w->id);
        if (r < 0)
            return r;
        vs->n_workspaces++;
    }

    for (size_t i = 0; i < nw; i++) {
        const WorkspaceRecord *w = ws[i];
        if (!w->active)
            continue;
        PlaceWorkspaceScope *sc = &f.workspaces[f.n_workspaces++];
        if (!(sc->id = strdup(w->id)) || !(sc->neighbours = calloc(1, sizeof(char *))))
            return -ENOMEM;
        PlaceVolumeScope *vs = find_volume(&f, w->volume);
        r = strdup_or_null(w->volume, &sc->volume);
        if (r < 0)
            return r;
        if (!vs)
            continue;
        for (char **n = vs->workspaces; *n; n++) {
            if (streq(*n, w->id))
                continue;
            r = strv_extend(&sc->neighbours, *n);
            if (r < 0)
                return r;
            sc->n_neighbours++;
        }
    }
    *ret = f;
    f = (PlaceFlushScope) {};
    return 0;
}
