/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * How full a volume is. Bytes count as df(1) does: used against used plus
 * what an unprivileged writer may still take, so ext4's root reserve
 * reads as full. Inodes count too: a tree of small files (node_modules)
 * runs ext4 out of inodes long before it runs out of bytes.
 */
#include <inttypes.h>
#include <stdio.h>

#include "capacity.h"
#include "string-table.h"
#include "util.h"

static const char *const volume_health_table[_VOLUME_HEALTH_MAX] = {
    [VOLUME_HEALTH_OK] = "ok",
    [VOLUME_HEALTH_WARNING] = "warning",
    [VOLUME_HEALTH_DEGRADED] = "degraded",
    [VOLUME_HEALTH_FAILED] = "failed",
};
DEFINE_STRING_TABLE_LOOKUP(volume_health, VolumeHealth);

static unsigned percent_of(uint64_t part, uint64_t whole) {
    if (whole == 0)
        return 0;
    /* Rounded up, as df(1) rounds Use%, so that the two agree; part <=
     * whole here, and 128 bits keep it exact for any size. */
    return (unsigned) (((unsigned __int128) part * 100 + whole - 1) / whole);
}

void capacity_usage(const VolumeObservation *v, CapacityUsage *ret) {
    *ret = (CapacityUsage) {};
    if (!v->has_statvfs)
        return;
    ret->known = true;
    uint64_t usable = v->fs_used + v->fs_avail;
    ret->bytes_percent = percent_of(MIN(v->fs_used, usable), usable);
    if (v->fs_inodes > 0 && v->fs_inodes_free <= v->fs_inodes)
        ret->inodes_percent = percent_of(v->fs_inodes - v->fs_inodes_free, v->fs_inodes);
    ret->by_inodes = ret->inodes_percent > ret->bytes_percent;
    ret->percent = MAX(ret->bytes_percent, ret->inodes_percent);
}

int capacity_usage_describe(const VolumeObservation *v, const CapacityUsage *u, char **ret) {
    char a[16], b[16], c[16];
    int k;
    if (u->by_inodes)
        k = asprintf(ret, "%s has used %u%% of its inodes (%" PRIu64 " of %" PRIu64 ", %" PRIu64 " free)", v->name,
                     u->inodes_percent, v->fs_inodes - v->fs_inodes_free, v->fs_inodes, v->fs_inodes_free);
    else
        k = asprintf(ret, "%s is %u%% full (%s of %s used, %s free)", v->name, u->bytes_percent,
                     format_bytes(a, sizeof a, v->fs_used), format_bytes(b, sizeof b, v->fs_used + v->fs_avail),
                     format_bytes(c, sizeof c, v->fs_avail));
    return k < 0 ? -ENOMEM : 0;
}
