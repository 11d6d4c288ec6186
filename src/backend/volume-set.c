/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>

#include "volume-set.h"
#include "util.h"

void volume_spec_list_done(VolumeSpecList *list) {
    if (!list)
        return;
    for (size_t i = 0; i < list->n; i++)
        free(list->items[i].name);
    free(list->items);
    list->items = NULL;
    list->n = 0;
}

static VolumeSpec *find(VolumeSpecList *list, const char *name) {
    for (size_t i = 0; i < list->n; i++)
        if (streq(list->items[i].name, name))
            return &list->items[i];
    return NULL;
}

static int push(VolumeSpecList *list, VolumeSpec *v) {
    VolumeSpec *t = realloc(list->items, sizeof(VolumeSpec) * (list->n + 1));
    if (!t)
        return -ENOMEM;
    t[list->n++] = *v;
    list->items = t;
    return 0;
}

static int cmp_spec(const void *a, const void *b) {
    const VolumeSpec *x = a, *y = b;
    if (x->role != y->role)
        return x->role < y->role ? -1 : 1;
    if (x->index != y->index)
        return x->index < y->index ? -1 : 1;
    return strcmp(x->name, y->name);
}

int volume_spec_list_compute(const Layout *l, const StateRecord *record, VolumeSpecList *ret) {
    if (!l || !ret)
        return -EINVAL;
    VolumeSpecList list = {};
    int r;

    for (PoolRole role = 0; role < _POOL_ROLE_MAX; role++) {
        const Pool *p = layout_pool(l, role);
        if (!p)
            continue;
        unsigned n = role == POOL_CONTENT ? MAX(p->shards, 1u) : p->min_volumes;
        for (unsigned i = 0; i < n; i++) {
            VolumeSpec v = { .role = role, .index = i, .backend = p->backend, .pool = p, .declared = true };
            r = layout_volume_name(role, i, &v.name);
            if (r < 0)
                goto fail;
            v.record = record ? state_record_find_volume(record, v.name) : NULL;
            r = push(&list, &v);
            if (r < 0) {
                free(v.name);
                goto fail;
            }
        }
    }

    for (size_t i = 0; record && i < record->n_volumes; i++) {
        const VolumeRecord *vr = record->volumes[i];
        if (find(&list, vr->name))
            continue;
        const Pool *p = layout_pool(l, vr->role);
        /* State volumes carved on demand (index >= min_volumes) stay
         * declared while the pool allows that many. */
        bool declared = p && vr->role == POOL_STATE && vr->index < p->max_volumes;
        VolumeSpec v = {
            .role = vr->role,
            .index = vr->index,
            .backend = declared ? p->backend : vr->backend,
            .pool = p,
            .declared = declared,
            .record = vr,
        };
        v.name = strdup(vr->name);
        if (!v.name) {
            r = -ENOMEM;
            goto fail;
        }
        r = push(&list, &v);
        if (r < 0) {
            free(v.name);
            goto fail;
        }
    }
    if (list.n > 1)
        qsort(list.items, list.n, sizeof(VolumeSpec), cmp_spec);
    *ret = list;
    return 0;
fail:
    volume_spec_list_done(&list);
    return r;
}
