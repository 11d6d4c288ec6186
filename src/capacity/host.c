/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Room on the host filesystem that holds the backing files. Backing files
 * are sparse, so what the host has free is not what it can give: every
 * volume may still fill its file, and that promise comes first (volumes
 * are never overcommitted; backend_check_space() enforces the same rule
 * at the moment a file is created or extended).
 */
#include "capacity.h"
#include "util.h"

uint64_t capacity_host_promised(const Observation *obs) {
    uint64_t total = 0;
    for (size_t i = 0; obs && i < obs->n; i++) {
        const VolumeObservation *v = &obs->volumes[i];
        if (v->file_exists && v->file_is_regular && v->file_size > v->file_allocated)
            total += v->file_size - v->file_allocated;
    }
    return total;
}

uint64_t capacity_host_headroom(const Observation *obs) {
    if (!obs || !obs->has_backing_free)
        return 0;
    uint64_t promised = capacity_host_promised(obs);
    return obs->backing_free > promised ? obs->backing_free - promised : 0;
}

uint64_t capacity_host_reserve(const GrowthPolicy *g, const Observation *obs) {
    if (g->host_reserve_percent == 0)
        return g->host_reserve;
    uint64_t size = obs ? obs->backing_size : 0;
    return (uint64_t) (((unsigned __int128) size * g->host_reserve_percent) / 100);
}

uint64_t capacity_host_carvable(const Pool *p, const Observation *obs) {
    /* A pool without growth still leaves the default reserve: carving the
     * host full is how a host's other services go down. */
    GrowthPolicy dflt = { .host_reserve_percent = 5 };
    const GrowthPolicy *g = p && p->growth.enabled ? &p->growth : &dflt;
    uint64_t headroom = capacity_host_headroom(obs), reserve = capacity_host_reserve(g, obs);
    return headroom > reserve ? headroom - reserve : 0;
}
