/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The placement policy (see place-policy.h and docs/placement.md).
 *
 * Cost: one pass over the candidates to give each a verdict, a sort of the
 * eligible ones (n log n) and a sort of the indexes when a carve is needed.
 * With 300 volumes that is a few microseconds; the explanation is one
 * formatted line. The per-candidate "why" text is only built on request
 * (place_decision_format_why) so the hot path stays cheap.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "place-policy.h"
#include "place-strbuf.h"
#include "string-table.h"
#include "util.h"

static const char *const place_action_table[_PLACE_ACTION_MAX] = {
    [PLACE_ACTION_USE] = "use",
    [PLACE_ACTION_CARVE] = "carve",
    [PLACE_ACTION_REFUSE] = "refuse",
};

static const char *const place_reason_table[_PLACE_REASON_MAX] = {
    [PLACE_REASON_NONE] = "none",
    [PLACE_REASON_AT_BOUND] = "at-bound",
    [PLACE_REASON_TENANT] = "tenant",
    [PLACE_REASON_NO_SPACE] = "no-space",
    [PLACE_REASON_NO_INODES] = "no-inodes",
    [PLACE_REASON_DEGRADED] = "degraded",
    [PLACE_REASON_READ_ONLY] = "read-only",
    [PLACE_REASON_UNAVAILABLE] = "unavailable",
    [PLACE_REASON_NOT_STICKY] = "not-sticky",
    [PLACE_REASON_NO_QUOTA] = "no-quota",
    [PLACE_REASON_OVERCOMMIT] = "quota-overcommit",
    [PLACE_REASON_SLOW_FLUSH] = "slow-flush",
    [PLACE_REASON_POOL_FULL] = "pool-full",
    [PLACE_REASON_TOO_BIG] = "too-big",
    [PLACE_REASON_STICKY_MISSING] = "sticky-missing",
    [PLACE_REASON_HOST_FULL] = "host-full",
    [PLACE_REASON_INVALID] = "invalid",
};

DEFINE_STRING_TABLE_LOOKUP(place_action, PlaceAction);
DEFINE_STRING_TABLE_LOOKUP(place_reason, PlaceReason);

void place_pool_config_from_pool(const Pool *p, PlacePoolConfig *ret) {
    *ret = (PlacePoolConfig) {
        .pool_name = pool_role_to_string(p->role),
        .workspaces_per_volume = p->workspaces_per_volume,
        .max_volumes = p->max_volumes,
        .policy = p->placement,
        .tenant_isolation = p->tenant_isolation,
        .reserve_bytes = p->workspace_reserve,
        .reserve_inodes = p->workspace_reserve_inodes,
        .volume_size = p->volume_size,
        .quota_overcommit = p->quota_overcommit,
        .slow_flush_factor = p->slow_flush_factor,
        .slow_flush_floor_usec = p->slow_flush_floor,
    };
}

void place_decision_done(PlaceDecision *d) {
    if (!d)
        return;
    free(d->explanation);
    free(d->verdicts);
    *d = (PlaceDecision) {};
}

static const char *tenant_of(const char *t) {
    return t ?: "";
}

static uint64_t need_bytes(const PlaceRequest *req, const PlacePoolConfig *cfg) {
    return req->quota > 0 ? req->quota : cfg->reserve_bytes;
}

/* Whether the volume's quotas with this one would exceed what the layout
 * lets them promise: quota_overcommit times its size. Free space is
 * checked as well (a new workspace can write its whole quota now); this
 * bounds what the workspaces already there may still claim. */
static bool quota_overcommitted(const PlaceCandidate *c, const PlaceRequest *req, const PlacePoolConfig *cfg) {
    if (c->size_bytes == 0)
        return false;
    unsigned pct = cfg->quota_overcommit ?: 100;
    return (unsigned __int128) c->quota_sum + req->quota > (unsigned __int128) c->size_bytes * pct / 100;
}

/* "2.1 ms", "1.35 s": a flush cost as the probe measured it. */
static const char *format_flush(char *buf, size_t n, uint64_t usec) {
    if (usec < USEC_PER_SEC)
        snprintf(buf, n, "%.1f ms", (double) usec / USEC_PER_MSEC);
    else
        snprintf(buf, n, "%.2f s", (double) usec / USEC_PER_SEC);
    return buf;
}

/* Whether a volume's flush figure counts: measured recently, on a volume
 * in service (one out of service is passed over for that reason, and its
 * figure says nothing of the others). */
static bool flush_figure_usable(const PlaceCandidate *c) {
    return c->flush_known &&
           !(c->flags & (PLACE_VOLUME_UNAVAILABLE | PLACE_VOLUME_READ_ONLY | PLACE_VOLUME_DEGRADED));
}

/* Slow by the rule: at or over the absolute floor (so that the jitter of
 * idle volumes, a millisecond against a tenth of one, never counts) and
 * more than factor times the pool's fastest. */
static bool flush_is_slow(const PlaceCandidate *c, const PlacePoolConfig *cfg, uint64_t baseline) {
    return flush_figure_usable(c) && c->flush_usec >= cfg->slow_flush_floor_usec &&
           (unsigned __int128) c->flush_usec > (unsigned __int128) baseline * cfg->slow_flush_factor;
}

/* The first reason that rules a candidate out, or NONE. A sticky request
 * only looks at its own volume, and does not check space there: the data is
 * already on it. */
static PlaceReason candidate_reason(const PlaceCandidate *c, const PlaceRequest *req,
                                    const PlacePoolConfig *cfg) {
    if (c->flags & PLACE_VOLUME_UNAVAILABLE)
        return PLACE_REASON_UNAVAILABLE;
    if (c->flags & PLACE_VOLUME_READ_ONLY)
        return PLACE_REASON_READ_ONLY;
    if (c->flags & PLACE_VOLUME_DEGRADED)
        return PLACE_REASON_DEGRADED;
    if (req->sticky_volume && !streq_ptr(c->name, req->sticky_volume))
        return PLACE_REASON_NOT_STICKY;
    if (c->n_workspaces >= cfg->workspaces_per_volume)
        return PLACE_REASON_AT_BOUND;
    if (cfg->tenant_isolation && c->n_workspaces > 0 &&
        (c->mixed_tenants || !streq(tenant_of(c->tenant), tenant_of(req->tenant))))
        return PLACE_REASON_TENANT;
    if (req->sticky_volume)
        return PLACE_REASON_NONE;
    if (req->quota > 0 && (c->flags & PLACE_VOLUME_NO_QUOTA))
        return PLACE_REASON_NO_QUOTA;
    if (req->quota > 0 && quota_overcommitted(c, req, cfg))
        return PLACE_REASON_OVERCOMMIT;
    if (c->free_bytes < need_bytes(req, cfg))
        return PLACE_REASON_NO_SPACE;
    if (c->free_inodes < cfg->reserve_inodes)
        return PLACE_REASON_NO_INODES;
    return PLACE_REASON_NONE;
}

/* qsort_r context: the candidates and the policy. */
typedef struct RankContext {
    const PlaceCandidate *candidates;
    PlacementPolicy policy;
} RankContext;

static int cmp_u64_desc(uint64_t a, uint64_t b) {
    return a > b ? -1 : a < b ? 1 : 0;
}

/* spread: fewest workspaces, then most free space, then lowest index.
 * pack: most workspaces (the fullest volume that still fits), then lowest
 * index. The index is unique, so the order is total and the choice does
 * not depend on the input order. */
static int verdict_compare(const void *a, const void *b, void *userdata) {
    const RankContext *ctx = userdata;
    const PlaceCandidate *x = &ctx->candidates[((const PlaceVerdict *) a)->candidate];
    const PlaceCandidate *y = &ctx->candidates[((const PlaceVerdict *) b)->candidate];
    int r;

    if (ctx->policy == PLACEMENT_PACK) {
        if (x->n_workspaces != y->n_workspaces)
            return x->n_workspaces > y->n_workspaces ? -1 : 1;
    } else {
        if (x->n_workspaces != y->n_workspaces)
            return x->n_workspaces < y->n_workspaces ? -1 : 1;
        r = cmp_u64_desc(x->free_bytes, y->free_bytes);
        if (r != 0)
            return r;
    }
    return x->index < y->index ? -1 : x->index > y->index ? 1 : 0;
}

static int cmp_unsigned(const void *a, const void *b) {
    unsigned x = *(const unsigned *) a, y = *(const unsigned *) b;
    return x < y ? -1 : x > y ? 1 : 0;
}

/* The lowest index no candidate uses, so that names stay dense
 * (state-0 .. state-N) and a retired index is reused first. */
static int lowest_free_index(const PlaceCandidate *candidates, size_t n, unsigned *ret) {
    _cleanup_free_ unsigned *idx = malloc(sizeof(unsigned) * (n ?: 1));
    if (!idx)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        idx[i] = candidates[i].index;
    qsort(idx, n, sizeof(unsigned), cmp_unsigned);
    unsigned k = 0;
    for (size_t i = 0; i < n; i++) {
        if (idx[i] > k)
            break;
        if (idx[i] == k)
            k++;
    }
    *ret = k;
    return 0;
}

/* "3 at the bound (workspaces_per_volume=3), 1 holds another tenant
 * (tenant_isolation)" */
static void append_rejections(PlaceStrbuf *b, const size_t counts[_PLACE_REASON_MAX],
                              const PlaceRequest *req, const PlacePoolConfig *cfg, uint64_t flush_baseline,
                              uint64_t flush_slowest) {
    char buf[32];
    bool first = true;

    for (PlaceReason r = PLACE_REASON_AT_BOUND; r < _PLACE_REASON_MAX; r++) {
        size_t n = counts[r];
        if (n == 0)
            continue;
        place_strbuf_append(b, "%s%zu ", first ? "" : ", ", n);
        first = false;
        switch (r) {
        case PLACE_REASON_AT_BOUND:
            place_strbuf_append(b, "at the bound (workspaces_per_volume=%u)",
                                cfg->workspaces_per_volume);
            break;
        case PLACE_REASON_TENANT:
            place_strbuf_append(b, "%s another tenant (tenant_isolation)",
                                n == 1 ? "holds" : "hold");
            break;
        case PLACE_REASON_NO_SPACE:
            place_strbuf_append(b, "with less than %s free (%s)",
                                format_bytes(buf, sizeof(buf), need_bytes(req, cfg)),
                                req->quota > 0 ? "the quota" : "workspace_reserve");
            break;
        case PLACE_REASON_NO_INODES:
            place_strbuf_append(b, "with fewer than %" PRIu64 " free inodes "
                                "(workspace_reserve_inodes)", cfg->reserve_inodes);
            break;
        case PLACE_REASON_DEGRADED:
            place_strbuf_append(b, "degraded");
            break;
        case PLACE_REASON_READ_ONLY:
            place_strbuf_append(b, "read-only");
            break;
        case PLACE_REASON_UNAVAILABLE:
            place_strbuf_append(b, "unavailable (not mounted)");
            break;
        case PLACE_REASON_NOT_STICKY:
            place_strbuf_append(b, "not holding its data");
            break;
        case PLACE_REASON_NO_QUOTA:
            place_strbuf_append(b, "not enforcing project quotas");
            break;
        case PLACE_REASON_OVERCOMMIT:
            place_strbuf_append(b, "with quotas that would exceed %u%% of the volume (quota_overcommit)",
                                cfg->quota_overcommit ?: 100);
            break;
        case PLACE_REASON_SLOW_FLUSH: {
            char buf2[32];
            place_strbuf_append(b, "flushing slowly (%s%s recently, over %ux the pool's fastest, ",
                                n == 1 ? "" : "up to ", format_flush(buf, sizeof(buf), flush_slowest),
                                cfg->slow_flush_factor);
            place_strbuf_append(b, "%s; slow_flush_factor)", format_flush(buf2, sizeof(buf2), flush_baseline));
            break;
        }
        default:
            place_strbuf_append(b, "%s", place_reason_to_string(r));
        }
    }
    if (first)
        place_strbuf_append(b, "none exists");
}

/* Which settings an operator can change for the reasons seen. */
static void append_settings_hint(PlaceStrbuf *b, const size_t counts[_PLACE_REASON_MAX],
                                 const PlacePoolConfig *cfg, bool can_carve) {
    const char *pool = cfg->pool_name ?: "state";
    place_strbuf_append(b, "; raise pools.%s.max_volumes", pool);
    if (counts[PLACE_REASON_AT_BOUND] > 0)
        place_strbuf_append(b, " or workspaces_per_volume");
    if (counts[PLACE_REASON_TENANT] > 0)
        place_strbuf_append(b, ", or turn off tenant_isolation");
    if (counts[PLACE_REASON_NO_SPACE] > 0 || counts[PLACE_REASON_NO_INODES] > 0)
        place_strbuf_append(b, ", or free space on the volumes");
    (void) can_carve;
}

static const char *policy_rule(PlacementPolicy p) {
    return p == PLACEMENT_PACK ? "pack (most workspaces that still fit, then lowest index)"
                               : "spread (fewest workspaces, then most free space, then lowest index)";
}

/* Whether the carve branch below would carve (not refuse): the same
 * three checks, in the same order. */
static bool can_carve(size_t n_candidates, const PlaceRequest *req, const PlacePoolConfig *cfg) {
    if (n_candidates >= cfg->max_volumes)
        return false;
    if (cfg->volume_size > 0 && need_bytes(req, cfg) > cfg->volume_size)
        return false;
    if (cfg->host_checked && cfg->volume_size > cfg->host_carvable)
        return false;
    return true;
}

int place_policy_decide(const PlaceCandidate *candidates, size_t n_candidates,
                        const PlaceRequest *req, const PlacePoolConfig *cfg,
                        PlaceDecision *ret) {
    if ((!candidates && n_candidates > 0) || !req || !cfg || !ret)
        return -EINVAL;

    PlaceDecision d = { .action = PLACE_ACTION_REFUSE };
    PlaceStrbuf b = {};
    size_t counts[_PLACE_REASON_MAX] = {};
    const char *pool = cfg->pool_name ?: "state";
    uint64_t flush_baseline = 0, flush_slowest = 0;
    bool flush_fallback = false;
    _cleanup_free_ PlaceReason *reasons = NULL;
    char buf[32];
    int r;

    if (cfg->workspaces_per_volume == 0 || isempty(req->id)) {
        d.reason = PLACE_REASON_INVALID;
        place_strbuf_append(&b, cfg->workspaces_per_volume == 0
                                    ? "pool '%s' has workspaces_per_volume=0: no workspace can be placed"
                                    : "pool '%s': the request has no workspace id",
                            pool);
        goto finish;
    }

    d.verdicts = calloc(n_candidates ?: 1, sizeof(PlaceVerdict));
    reasons = calloc(n_candidates ?: 1, sizeof(PlaceReason));
    if (!d.verdicts || !reasons) {
        place_decision_done(&d);
        return -ENOMEM;
    }

    size_t n_eligible = 0;
    for (size_t i = 0; i < n_candidates; i++) {
        reasons[i] = candidate_reason(&candidates[i], req, cfg);
        if (reasons[i] == PLACE_REASON_NONE)
            n_eligible++;
    }

    /* Placement by measured flush cost. The flush probe times a 4 KiB
     * write + fsync on every volume; a volume where that is slow is one
     * where a neighbour keeps the journal (or the host's) busy, and every
     * save of a workspace placed there waits behind it. So, when the pool
     * has a fast volume to compare with, an eligible volume that is slow
     * both in absolute terms (floor) and relative to the fastest (factor)
     * is passed over, as long as something else can take the workspace:
     * a volume that is not slow, or failing that a new one. When nothing
     * else can, the usual rule places it on a slow one after all (a slow
     * save beats a refused workspace). A sticky request goes where its
     * data is. The baseline is the fastest measured volume in service,
     * whether or not it can take this workspace: a pool whose free slots
     * are all on busy volumes next to quiet full ones is exactly the case
     * where carving helps. */
    if (cfg->slow_flush_factor > 0 && !req->sticky_volume && n_eligible > 0) {
        bool have_baseline = false;
        for (size_t i = 0; i < n_candidates; i++)
            if (flush_figure_usable(&candidates[i]) && (!have_baseline || candidates[i].flush_usec < flush_baseline)) {
                flush_baseline = candidates[i].flush_usec;
                have_baseline = true;
            }
        size_t n_slow = 0;
        for (size_t i = 0; have_baseline && i < n_candidates; i++)
            if (reasons[i] == PLACE_REASON_NONE && flush_is_slow(&candidates[i], cfg, flush_baseline)) {
                n_slow++;
                flush_slowest = MAX(flush_slowest, candidates[i].flush_usec);
            }
        if (n_slow > 0 && (n_slow < n_eligible || can_carve(n_candidates, req, cfg))) {
            for (size_t i = 0; i < n_candidates; i++)
                if (reasons[i] == PLACE_REASON_NONE && flush_is_slow(&candidates[i], cfg, flush_baseline))
                    reasons[i] = PLACE_REASON_SLOW_FLUSH;
            n_eligible -= n_slow;
        } else if (n_slow > 0)
            flush_fallback = true;
    }

    /* Eligible candidates are collected at the front, rejected ones at the
     * back (in input order once reversed below). */
    size_t back = n_candidates, front = 0;
    size_t sticky = SIZE_MAX;
    for (size_t i = 0; i < n_candidates; i++) {
        PlaceReason why = reasons[i];
        if (req->sticky_volume && streq_ptr(candidates[i].name, req->sticky_volume))
            sticky = i;
        if (why == PLACE_REASON_NONE)
            d.verdicts[front++] = (PlaceVerdict) { .candidate = i };
        else {
            d.verdicts[--back] = (PlaceVerdict) {
                .candidate = i,
                .reason = why,
                .flush_baseline_usec = why == PLACE_REASON_SLOW_FLUSH ? flush_baseline : 0,
            };
            counts[why]++;
        }
    }
    assert(front == n_eligible);
    d.n_verdicts = n_candidates;
    for (size_t i = back, j = n_candidates; i + 1 < j; i++, j--) {
        PlaceVerdict t = d.verdicts[i];
        d.verdicts[i] = d.verdicts[j - 1];
        d.verdicts[j - 1] = t;
    }

    RankContext ctx = { .candidates = candidates, .policy = cfg->policy };
    qsort_r(d.verdicts, n_eligible, sizeof(PlaceVerdict), verdict_compare, &ctx);
    for (size_t i = 0; i < n_eligible; i++)
        d.verdicts[i].rank = (unsigned) (i + 1);

    if (req->sticky_volume) {
        /* Stickiness: the data stays where it is. If that volume cannot
         * take the workspace now, refuse: moving data behind the
         * operator's back is worse than a clear error. */
        if (sticky == SIZE_MAX) {
            d.reason = PLACE_REASON_STICKY_MISSING;
            place_strbuf_append(&b, "workspace '%s' has kept data on volume '%s', which is not "
                                "part of pool '%s' any more; restore the volume, or remove the "
                                "workspace's record with its data destroyed",
                                req->id, req->sticky_volume, pool);
            goto finish;
        }
        const PlaceCandidate *c = &candidates[sticky];
        if (n_eligible == 0) {
            PlaceReason why = candidate_reason(c, req, cfg);
            d.reason = why;
            place_strbuf_append(&b, "workspace '%s' has kept data on %s, which cannot take it "
                                "back: ", req->id, c->name);
            switch (why) {
            case PLACE_REASON_AT_BOUND:
                place_strbuf_append(&b, "it holds %u workspaces (workspaces_per_volume=%u); "
                                    "data is not moved: remove a workspace from %s or raise "
                                    "pools.%s.workspaces_per_volume",
                                    c->n_workspaces, cfg->workspaces_per_volume, c->name, pool);
                break;
            case PLACE_REASON_TENANT:
                place_strbuf_append(&b, "it holds tenant '%s' and tenant '%s' may not share it "
                                    "(pools.%s.tenant_isolation); data is not moved",
                                    c->mixed_tenants ? "(several)" : tenant_of(c->tenant),
                                    tenant_of(req->tenant), pool);
                break;
            default:
                place_strbuf_append(&b, "it is %s; data is not moved",
                                    place_reason_to_string(why));
            }
            goto finish;
        }
        d.action = PLACE_ACTION_USE;
        d.candidate = sticky;
        place_strbuf_append(&b, "workspace '%s' goes back to %s, which holds its kept data "
                            "(stickiness); %u/%u workspaces there before it",
                            req->id, c->name, c->n_workspaces, cfg->workspaces_per_volume);
        goto finish;
    }

    if (n_eligible > 0) {
        const PlaceCandidate *c = &candidates[d.verdicts[0].candidate];
        d.action = PLACE_ACTION_USE;
        d.candidate = d.verdicts[0].candidate;
        place_strbuf_append(&b, "%s: %u/%u workspaces, %s free; ranked first of %zu eligible "
                            "volume%s of pool '%s' by %s",
                            c->name, c->n_workspaces, cfg->workspaces_per_volume,
                            format_bytes(buf, sizeof(buf), c->free_bytes), n_eligible,
                            n_eligible == 1 ? "" : "s", pool, policy_rule(cfg->policy));
        if (n_eligible < n_candidates) {
            place_strbuf_append(&b, "; rejected: ");
            append_rejections(&b, counts, req, cfg, flush_baseline, flush_slowest);
        }
        if (flush_fallback) {
            char buf2[32];
            place_strbuf_append(&b, "; every volume that can take it flushes slowly (up to %s recently, over "
                                "%ux the pool's fastest, ", format_flush(buf, sizeof(buf), flush_slowest),
                                cfg->slow_flush_factor);
            place_strbuf_append(&b, "%s; slow_flush_factor) and no new volume can be carved, so it is placed "
                                "by the usual rule", format_flush(buf2, sizeof(buf2), flush_baseline));
        }
        goto finish;
    }

    /* No existing volume fits. Elastic domains: carve the next one while
     * max_volumes allows; never over-subscribe one that exists. */
    if (n_candidates < cfg->max_volumes) {
        uint64_t need = need_bytes(req, cfg);
        if (cfg->volume_size > 0 && need > cfg->volume_size) {
            d.reason = PLACE_REASON_TOO_BIG;
            place_strbuf_append(&b, "workspace '%s' needs %s (%s) but a volume of pool '%s' "
                                "is only ", req->id, format_bytes(buf, sizeof(buf), need),
                                req->quota > 0 ? "its quota" : "workspace_reserve", pool);
            place_strbuf_append(&b, "%s (volume_size); raise pools.%s.volume_size or lower "
                                "the request", format_bytes(buf, sizeof(buf), cfg->volume_size),
                                pool);
            goto finish;
        }
        if (cfg->host_checked && cfg->volume_size > cfg->host_carvable) {
            char buf2[32];
            d.reason = PLACE_REASON_HOST_FULL;
            place_strbuf_append(&b, "no volume of pool '%s' can take workspace '%s' (", pool, req->id);
            append_rejections(&b, counts, req, cfg, flush_baseline, flush_slowest);
            place_strbuf_append(&b, ") and a new one (%s, volume_size) does not fit on the host: the filesystem "
                                "under the backing files can give %s beyond what the volumes may still claim "
                                "and the host reserve; free space there", format_bytes(buf, sizeof(buf),
                                cfg->volume_size), format_bytes(buf2, sizeof(buf2), cfg->host_carvable));
            goto finish;
        }
        r = lowest_free_index(candidates, n_candidates, &d.carve_index);
        if (r < 0) {
            place_decision_done(&d);
            place_strbuf_done(&b);
            return r;
        }
        d.action = PLACE_ACTION_CARVE;
        place_strbuf_append(&b, "no volume of pool '%s' can take workspace '%s' (", pool, req->id);
        append_rejections(&b, counts, req, cfg, flush_baseline, flush_slowest);
        place_strbuf_append(&b, "); carving %s-%u, volume %zu of at most %u (max_volumes)",
                            pool, d.carve_index, n_candidates + 1, cfg->max_volumes);
        goto finish;
    }

    d.reason = PLACE_REASON_POOL_FULL;
    if (counts[PLACE_REASON_AT_BOUND] == n_candidates && n_candidates > 0)
        place_strbuf_append(&b, "pool '%s' is full: %zu volume%s × %u workspaces "
                            "(workspaces_per_volume) are in use; raise pools.%s.max_volumes or "
                            "workspaces_per_volume",
                            pool, n_candidates, n_candidates == 1 ? "" : "s",
                            cfg->workspaces_per_volume, pool);
    else {
        place_strbuf_append(&b, "pool '%s' has no volume for workspace '%s'", pool, req->id);
        if (cfg->tenant_isolation)
            place_strbuf_append(&b, " (tenant '%s')", tenant_of(req->tenant));
        place_strbuf_append(&b, ": ");
        append_rejections(&b, counts, req, cfg, flush_baseline, flush_slowest);
        place_strbuf_append(&b, "; all %zu volumes allowed exist (max_volumes=%u)",
                            n_candidates, cfg->max_volumes);
        append_settings_hint(&b, counts, cfg, false);
    }

finish:
    r = place_strbuf_finish(&b, &d.explanation);
    if (r < 0) {
        place_decision_done(&d);
        return r;
    }
    *ret = d;
    return 0;
}

int place_verdict_describe(const PlaceVerdict *v, const PlaceCandidate *c,
                           const PlaceRequest *req, const PlacePoolConfig *cfg, char **ret) {
    PlaceStrbuf b = {};
    char buf[32];

    if (!v || !c || !req || !cfg || !ret)
        return -EINVAL;
    switch (v->reason) {
    case PLACE_REASON_NONE:
        place_strbuf_append(&b, "rank %u: %u/%u workspaces, %s free", v->rank, c->n_workspaces,
                            cfg->workspaces_per_volume,
                            format_bytes(buf, sizeof(buf), c->free_bytes));
        if (c->flush_known)
            place_strbuf_append(&b, ", flush %s", format_flush(buf, sizeof(buf), c->flush_usec));
        break;
    case PLACE_REASON_SLOW_FLUSH: {
        char buf2[32];
        place_strbuf_append(&b, "rejected: flushes slowly, %s recently (flush probe), ",
                            format_flush(buf, sizeof(buf), c->flush_usec));
        place_strbuf_append(&b, "over %ux the pool's fastest volume (%s; slow_flush_factor) and ",
                            cfg->slow_flush_factor, format_flush(buf, sizeof(buf), v->flush_baseline_usec));
        place_strbuf_append(&b, "%s (slow_flush_floor)", format_flush(buf2, sizeof(buf2), cfg->slow_flush_floor_usec));
        break;
    }
    case PLACE_REASON_AT_BOUND:
        place_strbuf_append(&b, "rejected: at the bound, %u/%u workspaces (workspaces_per_volume)",
                            c->n_workspaces, cfg->workspaces_per_volume);
        break;
    case PLACE_REASON_TENANT:
        place_strbuf_append(&b, "rejected: holds tenant '%s', request is tenant '%s' "
                            "(tenant_isolation)",
                            c->mixed_tenants ? "(several)" : tenant_of(c->tenant),
                            tenant_of(req->tenant));
        break;
    case PLACE_REASON_NO_SPACE:
        place_strbuf_append(&b, "rejected: %s free, ", format_bytes(buf, sizeof(buf), c->free_bytes));
        place_strbuf_append(&b, "needs %s (%s)", format_bytes(buf, sizeof(buf), need_bytes(req, cfg)),
                            req->quota > 0 ? "quota" : "workspace_reserve");
        break;
    case PLACE_REASON_NO_INODES:
        place_strbuf_append(&b, "rejected: %" PRIu64 " free inodes, needs %" PRIu64
                            " (workspace_reserve_inodes)", c->free_inodes, cfg->reserve_inodes);
        break;
    case PLACE_REASON_NOT_STICKY:
        place_strbuf_append(&b, "not considered: the workspace's data is on %s", req->sticky_volume);
        break;
    case PLACE_REASON_NO_QUOTA:
        place_strbuf_append(&b, "rejected: it does not enforce project quotas (mounted without prjquota)");
        break;
    case PLACE_REASON_OVERCOMMIT: {
        char buf2[32];
        place_strbuf_append(&b, "rejected: quotas of %s there, ", format_bytes(buf, sizeof(buf), c->quota_sum));
        place_strbuf_append(&b, "%s more would exceed %u%% of its %s (quota_overcommit)",
                            format_bytes(buf, sizeof(buf), req->quota), cfg->quota_overcommit ?: 100,
                            format_bytes(buf2, sizeof(buf2), c->size_bytes));
        break;
    }
    default:
        place_strbuf_append(&b, "rejected: %s", place_reason_to_string(v->reason));
    }
    return place_strbuf_finish(&b, ret);
}

int place_decision_format_why(const PlaceDecision *d, const PlaceCandidate *candidates,
                              size_t n_candidates, const PlaceRequest *req,
                              const PlacePoolConfig *cfg, char **ret) {
    PlaceStrbuf b = {};

    if (!d || !req || !cfg || !ret || d->n_verdicts > n_candidates)
        return -EINVAL;
    place_strbuf_append(&b, "%s: %s\n", place_action_to_string(d->action), d->explanation ?: "");
    for (size_t i = 0; i < d->n_verdicts; i++) {
        const PlaceVerdict *v = &d->verdicts[i];
        _cleanup_free_ char *line = NULL;
        int r = place_verdict_describe(v, &candidates[v->candidate], req, cfg, &line);
        if (r < 0) {
            place_strbuf_done(&b);
            return r;
        }
        place_strbuf_append(&b, "  %-12s %s%s\n", candidates[v->candidate].name ?: "?", line,
                            d->action == PLACE_ACTION_USE && v->candidate == d->candidate
                                ? "  <- chosen" : "");
    }
    return place_strbuf_finish(&b, ret);
}
