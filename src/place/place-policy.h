/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The placement policy: a pure, deterministic function from (candidate
 * volumes, request, pool settings) to a decision. It does no I/O, reads no
 * clock and keeps no state, so the same input always gives the same answer
 * (tests and `layoutctl why` rely on that). See docs/placement.md.
 *
 * The bound: a volume is a flush domain (syncfs(2) flushes the whole
 * filesystem), so its number of *active* workspaces is the number of
 * workspaces one flush makes wait. The policy never lets that number exceed
 * Pool.workspaces_per_volume.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "macro.h"

typedef enum PlaceVolumeFlags {
    PLACE_VOLUME_DEGRADED = 1U << 0,    /* e.g. VDO in recovery, errors seen */
    PLACE_VOLUME_READ_ONLY = 1U << 1,   /* mounted read-only / fs went ro */
    PLACE_VOLUME_UNAVAILABLE = 1U << 2, /* not mounted, not observed */
    PLACE_VOLUME_CARVING = 1U << 3,     /* being carved: eligible, a create on it waits */
    PLACE_VOLUME_NO_QUOTA = 1U << 4,    /* does not enforce project quotas (not
                                           mounted with them, or not XFS) */
} PlaceVolumeFlags;

/* One volume of the pool, as the caller observed it. Strings are borrowed. */
typedef struct PlaceCandidate {
    const char *name;        /* "state-3" */
    unsigned index;          /* 3 */
    unsigned n_workspaces;   /* workspaces placed on it, active or being created */
    const char *tenant;      /* the tenant of those workspaces ("" = the
                                workspaces have no tenant); ignored when
                                n_workspaces == 0 */
    bool mixed_tenants;      /* more than one tenant present (drift) */
    uint64_t free_bytes;     /* available to an unprivileged writer */
    uint64_t free_inodes;
    uint64_t size_bytes;     /* the filesystem's size, what growth can add
                                included; 0 = unknown (not checked) */
    uint64_t quota_sum;      /* the quotas of the workspaces on it */
    unsigned flags;          /* PlaceVolumeFlags */
    bool flush_known;        /* flush_usec is a recent measurement */
    uint64_t flush_usec;     /* its recent flush cost (the agent's flush
                                probe: a 4 KiB write + fsync), usec */
} PlaceCandidate;

typedef struct PlaceRequest {
    const char *id;
    const char *tenant;       /* NULL or "" = no tenant (tenant "") */
    uint64_t quota;           /* bytes; 0 = the pool's workspace_reserve */
    const char *sticky_volume; /* volume that holds this id's kept data
                                  (an inactive record), or NULL */
} PlaceRequest;

typedef struct PlacePoolConfig {
    const char *pool_name;           /* "state": used in explanations */
    unsigned workspaces_per_volume;  /* the bound, >= 1 */
    unsigned max_volumes;            /* carving stops here */
    PlacementPolicy policy;
    bool tenant_isolation;
    uint64_t reserve_bytes;          /* workspace_reserve */
    uint64_t reserve_inodes;         /* workspace_reserve_inodes */
    unsigned quota_overcommit;       /* percent: the quotas on a volume may
                                        add up to this share of its size;
                                        0: 100 */
    uint64_t volume_size;            /* size of a newly carved volume; 0 =
                                        unknown (not checked) */
    bool host_checked;               /* host_carvable is known: */
    uint64_t host_carvable;          /* bytes the host filesystem can give
                                        new volumes (beyond its reserve) */
    /* Placement by measured flush cost: a candidate whose flush_usec is
     * at least slow_flush_floor_usec and more than slow_flush_factor times
     * the pool's fastest measured volume is passed over (slow-flush) while
     * another volume can take the workspace. 0: off. */
    unsigned slow_flush_factor;
    uint64_t slow_flush_floor_usec;
} PlacePoolConfig;

/* Fills a PlacePoolConfig from a layout pool (borrowing its name). */
void place_pool_config_from_pool(const Pool *p, PlacePoolConfig *ret);

typedef enum PlaceAction {
    PLACE_ACTION_USE,    /* place on an existing volume */
    PLACE_ACTION_CARVE,  /* carve a new volume (carve_index), place there */
    PLACE_ACTION_REFUSE, /* reason + explanation say why */
    _PLACE_ACTION_MAX,
    _PLACE_ACTION_INVALID = -EINVAL,
} PlaceAction;

/* Why a candidate was rejected, or why a request was refused. */
typedef enum PlaceReason {
    PLACE_REASON_NONE,              /* eligible / not refused */
    PLACE_REASON_AT_BOUND,          /* n_workspaces >= workspaces_per_volume */
    PLACE_REASON_TENANT,            /* holds another tenant (tenant_isolation) */
    PLACE_REASON_NO_SPACE,          /* free bytes < quota or workspace_reserve */
    PLACE_REASON_NO_INODES,         /* free inodes < workspace_reserve_inodes */
    PLACE_REASON_DEGRADED,
    PLACE_REASON_READ_ONLY,
    PLACE_REASON_UNAVAILABLE,
    PLACE_REASON_NOT_STICKY,        /* the id's data lives on another volume */
    PLACE_REASON_NO_QUOTA,          /* a quota asked; the volume cannot enforce one */
    PLACE_REASON_OVERCOMMIT,        /* its quotas plus this one exceed
                                       quota_overcommit x its size */
    PLACE_REASON_SLOW_FLUSH,        /* its recent flush cost is over
                                       slow_flush_floor and slow_flush_factor
                                       x the pool's fastest volume, and
                                       another volume can take the workspace */
    /* refusals only: */
    PLACE_REASON_POOL_FULL,         /* no volume fits and max_volumes reached */
    PLACE_REASON_TOO_BIG,           /* the request does not fit a new volume */
    PLACE_REASON_STICKY_MISSING,    /* the volume with the id's data is gone */
    PLACE_REASON_HOST_FULL,         /* a new volume does not fit on the host */
    PLACE_REASON_INVALID,           /* bad request or pool settings */
    _PLACE_REASON_MAX,
    _PLACE_REASON_INVALID = -EINVAL,
} PlaceReason;

const char *place_action_to_string(PlaceAction a);
PlaceAction place_action_from_string(const char *s);
const char *place_reason_to_string(PlaceReason r);
PlaceReason place_reason_from_string(const char *s);

/* The verdict on one candidate: rank >= 1 for eligible candidates (1 won
 * or would have won), 0 for rejected ones (reason says why). */
typedef struct PlaceVerdict {
    size_t candidate;   /* index into the candidates array */
    unsigned rank;
    PlaceReason reason;
    uint64_t flush_baseline_usec; /* SLOW_FLUSH: the pool's fastest
                                     measured flush it was compared with */
} PlaceVerdict;

typedef struct PlaceDecision {
    PlaceAction action;
    PlaceReason reason;     /* REFUSE: why; otherwise NONE */
    size_t candidate;       /* USE: index into the candidates array */
    unsigned carve_index;   /* CARVE: the index of the volume to carve */
    char *explanation;      /* one line: why this volume / why refused,
                               naming the setting to raise */
    /* Every candidate: eligible ones first in rank order, then the rejected
     * ones in input order. */
    PlaceVerdict *verdicts;
    size_t n_verdicts;
} PlaceDecision;

/* Frees what a decision owns and zeroes it. Accepts NULL. */
void place_decision_done(PlaceDecision *d);

/*
 * Decides where a workspace goes. Deterministic: the result depends only on
 * the arguments (not on the order of equal candidates, since the volume
 * index breaks every tie; candidate names and indexes must be unique).
 * Returns: -EINVAL (NULL arguments), -ENOMEM, 0 with *ret filled (also for
 * a refusal: ret->action == PLACE_ACTION_REFUSE).
 */
int place_policy_decide(const PlaceCandidate *candidates, size_t n_candidates,
                        const PlaceRequest *req, const PlacePoolConfig *cfg,
                        PlaceDecision *ret);

/*
 * The "why" text of a decision: the explanation, then one line per
 * candidate with its rank or rejection reason, as `layoutctl why` prints it.
 * Returns: -ENOMEM, 0 with *ret set.
 */
int place_decision_format_why(const PlaceDecision *d, const PlaceCandidate *candidates,
                              size_t n_candidates, const PlaceRequest *req,
                              const PlacePoolConfig *cfg, char **ret);

/* One line describing why a candidate got its verdict (e.g. "at the bound:
 * 3/3 workspaces (workspaces_per_volume)"). Returns -ENOMEM or 0. */
int place_verdict_describe(const PlaceVerdict *v, const PlaceCandidate *c,
                           const PlaceRequest *req, const PlacePoolConfig *cfg, char **ret);
