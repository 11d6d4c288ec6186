/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * /v1/capacity's figures for one pool, from what the agent gathers per
 * volume: what a cluster scheduler reads to place workspaces onto hosts.
 * Only the arithmetic lives here (sums, slots, quota room); the agent
 * gathers the inputs and renders the JSON (docs/api.md).
 */
#include "capacity.h"
#include "util.h"

void capacity_pool_report(const Pool *p, const Observation *obs, const CapacityReportVolume *volumes, size_t n,
                          unsigned refused, CapacityPoolReport *ret) {
    bool state = p->role == POOL_STATE;
    CapacityPoolReport r = {};
    for (size_t i = 0; i < n; i++) {
        const CapacityReportVolume *rv = &volumes[i];
        const VolumeObservation *v = rv->observation;
        r.volumes++;
        r.growable_bytes += rv->growable;
        if (v->has_statvfs) {
            r.size_bytes += v->fs_size;
            r.used_bytes += v->fs_used;
            r.free_bytes += v->fs_avail;
        }
        if (!state)
            continue;
        r.workspaces += rv->workspaces;
        r.quota_bytes += rv->quota_bytes;
        /* The quotas a volume may still promise: quota_overcommit of its
         * size (growth included) less those of its workspaces. Only where
         * the kernel enforces them: elsewhere a quota is refused. */
        if (v->has_statvfs && rv->quota_enforced) {
            uint64_t allowed = (uint64_t) ((unsigned __int128) (v->fs_size + rv->growable) * p->quota_overcommit / 100);
            r.quota_bytes_free += allowed > rv->quota_bytes ? allowed - rv->quota_bytes : 0;
        }
        if (capacity_volume_accepts(p, v, rv->health, rv->growable) && rv->workspaces < p->workspaces_per_volume) {
            r.workspace_slots_free += p->workspaces_per_volume - rv->workspaces;
            r.volumes_accepting++;
        }
    }
    if (state) {
        r.refused_volumes = refused;
        r.carvable_volumes = capacity_pool_carvable(p, obs, r.volumes, refused, &r.carvable_limit);
        r.carvable_bytes = (uint64_t) r.carvable_volumes * p->volume_size;
        r.workspace_slots_free += (uint64_t) r.carvable_volumes * p->workspaces_per_volume;
        r.workspace_slots = (uint64_t) p->max_volumes * p->workspaces_per_volume;
    }
    *ret = r;
}
