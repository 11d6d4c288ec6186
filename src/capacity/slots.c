/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Room for workspaces, as /v1/capacity counts it for a cluster scheduler:
 * a slot counts only on a volume that takes workspaces now, and a volume
 * yet to carve only if the pool's limit and the host filesystem allow it.
 */
#include "capacity.h"
#include "util.h"

bool capacity_volume_accepts(const Pool *p, const VolumeObservation *v, VolumeHealth health, uint64_t growable) {
    return volume_observation_is_up(v) && v->has_statvfs &&
           (health == VOLUME_HEALTH_OK || health == VOLUME_HEALTH_WARNING) &&
           v->fs_avail + growable >= p->workspace_reserve &&
           v->fs_inodes_free >= p->workspace_reserve_inodes;
}

unsigned capacity_pool_carvable(const Pool *p, const Observation *obs, unsigned existing, unsigned refused,
                                const char **ret_limit) {
    const char *limit = "max_volumes";
    unsigned taken = existing + refused;
    unsigned n = p->max_volumes > taken ? p->max_volumes - taken : 0;
    if (refused > 0 && p->max_volumes > existing && n < p->max_volumes - existing)
        limit = "refused";
    const BackendTraits *t = backend_traits(p->backend);
    if (t && t->has_device && p->volume_size > 0 && obs && obs->has_backing_free) {
        uint64_t fit = capacity_host_carvable(p, obs) / p->volume_size;
        if (fit < n) {
            n = (unsigned) fit;
            limit = "host-space";
        }
    }
    if (ret_limit)
        *ret_limit = limit;
    return n;
}
