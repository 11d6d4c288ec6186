/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * When a volume grows, and by how much. Growth that comes too late is the
 * complaint peers collect (LVM thin autoextend off by default, Incus loop
 * pools that never grow), so the rule is simple and early: past
 * growth.threshold of bytes or inodes, grow by growth.step (default: double,
 * as Stratis does), up to growth.max_size, leaving growth.host_reserve free
 * on the host. What cannot grow says why, in words an operator can act on.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "capacity.h"
#include "util.h"

#define MIB_4 (4 * MIB)

void growth_decision_done(GrowthDecision *d) {
    if (!d)
        return;
    free(d->message);
    *d = (GrowthDecision) {};
}

_printf_(3, 4) static int refuse(GrowthDecision *d, const char *reason, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vasprintf(&d->message, fmt, ap);
    va_end(ap);
    if (k < 0) {
        d->message = NULL;
        return -ENOMEM;
    }
    d->action = GROWTH_REFUSE;
    d->reason = reason;
    return 0;
}

/* The rules a grow must pass besides the threshold, in one place for the
 * decision below and for capacity_growable(). */
static bool can_resize(const Pool *p, const GrowthEnv *env) {
    const BackendTraits *t = backend_traits(p->backend);
    return t && fs_type_can_grow(t->fs, env ? env->missing_capabilities : 0);
}

static uint64_t host_room(const GrowthPolicy *g, const Observation *obs) {
    uint64_t headroom = capacity_host_headroom(obs), reserve = capacity_host_reserve(g, obs);
    return headroom > reserve ? headroom - reserve : 0;
}

uint64_t capacity_growable(const Pool *p, const VolumeObservation *v, const Observation *obs, const GrowthEnv *env) {
    if (!p || !p->growth.enabled || !v->file_is_regular || v->file_size >= p->growth.max_size || !can_resize(p, env))
        return 0;
    return MIN(p->growth.max_size - v->file_size, host_room(&p->growth, obs));
}

int capacity_growth_decide(const Pool *p, const VolumeObservation *v, const Observation *obs, const GrowthEnv *env,
                           GrowthDecision *ret) {
    *ret = (GrowthDecision) {};
    if (!p || !p->growth.enabled || !v->declared || !volume_observation_is_up(v) || !v->has_statvfs ||
        !v->file_exists || !v->file_is_regular)
        return 0;
    const GrowthPolicy *g = &p->growth;
    CapacityUsage u;
    capacity_usage(v, &u);
    if (u.percent < g->threshold)
        return 0;

    _cleanup_free_ char *usage = NULL;
    if (capacity_usage_describe(v, &u, &usage) < 0)
        return -ENOMEM;
    char a[16], b[16], c[16], d[16];
    const uint64_t size = v->file_size;
    if (size >= g->max_size)
        return refuse(ret, "at-max",
                      "%s and cannot grow: it is at growth.max_size (%s); raise growth.max_size of pool '%s', "
                      "or free space in its workspaces",
                      usage, format_bytes(a, sizeof a, g->max_size), pool_role_to_string(p->role));
    if (!can_resize(p, env)) {
        const FsType *fs = backend_traits(p->backend)->fs;
        /* The backends that would grow here, from their traits. */
        char others[128] = "";
        for (Backend k = 0; k < _BACKEND_MAX; k++) {
            const BackendTraits *t = backend_traits(k);
            if (t->takes_growth && fs_type_can_grow(t->fs, env ? env->missing_capabilities : 0))
                snprintf(others + strlen(others), sizeof others - strlen(others), "%s%s",
                         others[0] ? " or " : ", or use ", backend_to_string(k));
        }
        return refuse(ret, "no-capability",
                      "%s and cannot grow: %s online resize needs %s, which layoutd does not have here; run it "
                      "with that capability (the systemd unit grants it)%s",
                      usage, fs ? fs->display_name : "its filesystem's",
                      fs && fs->grow.capability_name ? fs->grow.capability_name : "a capability", others);
    }

    /* size < max_size here; compared, never added, so a huge step (any
     * size the layout accepts) cannot wrap past max_size. */
    uint64_t by = g->step ? g->step : size;
    uint64_t to = by > g->max_size - size ? g->max_size : size + by;
    uint64_t headroom = capacity_host_headroom(obs), reserve = capacity_host_reserve(g, obs);
    uint64_t room = host_room(g, obs);
    if (to - size > room) {
        /* Part of a step is still worth taking, rounded to 4 MiB; a sliver
         * is not (it would only grow again at once). */
        uint64_t part = room - room % MIB_4;
        if (!obs || !obs->has_backing_free || part < MAX(size / 8, MIB_4))
            return refuse(ret, "host-short",
                          "%s and cannot grow from %s to %s: the host filesystem has %s to give (free space "
                          "beyond what the volumes may still claim) and growth.host_reserve keeps %s; free space "
                          "below %s, or lower growth.host_reserve",
                          usage, format_bytes(a, sizeof a, size), format_bytes(b, sizeof b, to),
                          format_bytes(c, sizeof c, headroom), format_bytes(d, sizeof d, reserve),
                          v->backing_path);
        to = size + part;
    }
    ret->action = GROWTH_GROW;
    ret->from = size;
    ret->to = to;
    if (asprintf(&ret->message, "%s, past growth.threshold (%u%%)", usage, g->threshold) < 0) {
        ret->message = NULL;
        return -ENOMEM;
    }
    return 0;
}
