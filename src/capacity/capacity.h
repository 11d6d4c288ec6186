/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Capacity policy: pure functions from a layout pool and an observation
 * to a judgement. How full a volume is (usage.c), what its health is and
 * what an operator should do about it (health.c), whether it should grow
 * now and by how much (growth.c), how much room the host has left for
 * growing and carving (host.c), where workspaces still fit (slots.c), what
 * /v1/capacity reports of a pool (report.c), and the problems an operator
 * must see (problems.c). Nothing here touches a device or keeps state: the
 * agent feeds in what only it knows (the flush probe, a grow in flight)
 * and acts on the answers. See docs/operations.md, "Capacity".
 */

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "layout.h"
#include "observation.h"
#include "result.h"
#include "state.h"

typedef enum VolumeHealth {
    VOLUME_HEALTH_OK,
    VOLUME_HEALTH_WARNING,  /* in service; needs attention soon (filling) */
    VOLUME_HEALTH_DEGRADED, /* in service, but not as asked, or writes fail */
    VOLUME_HEALTH_FAILED,   /* out of service */
    _VOLUME_HEALTH_MAX,
    _VOLUME_HEALTH_INVALID = -EINVAL,
} VolumeHealth;

const char *volume_health_to_string(VolumeHealth h);
VolumeHealth volume_health_from_string(const char *s);

/* ---- usage.c ------------------------------------------------------------ */

typedef struct CapacityUsage {
    bool known;               /* statvfs was read */
    unsigned bytes_percent;   /* used / (used + available to users), rounded up as df does */
    unsigned inodes_percent;  /* used / total inodes, rounded up; 0 when unknown */
    unsigned percent;         /* the fuller of the two */
    bool by_inodes;           /* ... and it is the inodes */
} CapacityUsage;

void capacity_usage(const VolumeObservation *v, CapacityUsage *ret);

/* "state-0 is 86% full (220MiB of 256MiB used, 36MiB free)" or the same
 * for inodes. Returns 0 or -ENOMEM. */
int capacity_usage_describe(const VolumeObservation *v, const CapacityUsage *u, char **ret);

/* ---- host.c ------------------------------------------------------------- */

/* Bytes the host filesystem (the one holding <root>/images) has promised
 * to our sparse backing files and not yet allocated. */
uint64_t capacity_host_promised(const Observation *obs);
/* Free bytes of that filesystem beyond the promise: what growing and
 * carving may still take. 0 when unknown. */
uint64_t capacity_host_headroom(const Observation *obs);
/* The floor growth and carving must leave free (growth.host_reserve). */
uint64_t capacity_host_reserve(const GrowthPolicy *g, const Observation *obs);
/* Bytes new volumes of pool p may take: headroom minus the reserve
 * (the reserve of p's growth policy, or its default when p has none). */
uint64_t capacity_host_carvable(const Pool *p, const Observation *obs);

/* ---- growth.c ----------------------------------------------------------- */

typedef enum GrowthAction {
    GROWTH_NONE,   /* below the threshold, or growth is off */
    GROWTH_GROW,   /* grow from `from` to `to` now */
    GROWTH_REFUSE, /* past the threshold, and it cannot grow: reason */
} GrowthAction;

typedef struct GrowthEnv {
    uint64_t missing_capabilities; /* bit N: capability N is not in the
                                      agent's effective set (0: none
                                      missing, or not known). A filesystem
                                      whose online grow needs one of them
                                      (FsType.grow: ext4 CAP_SYS_RESOURCE)
                                      does not grow. */
} GrowthEnv;

typedef struct GrowthDecision {
    GrowthAction action;
    uint64_t from, to;        /* GROW: backing bytes now and after */
    const char *reason;       /* REFUSE: "at-max", "host-short", "no-capability" */
    char *message;            /* GROW: what crossed the threshold; REFUSE:
                                 why it cannot grow and what to do */
} GrowthDecision;

/*
 * Decides whether volume v of pool p grows now. Never shrinks, never past
 * growth.max_size, never into the host's growth.host_reserve (a grow that
 * does not fit whole is cut down to what fits, if that is still worth a
 * grow: at least an eighth of the volume). A volume that is not up or not
 * measured is NONE (its health says why).
 * Returns 0 or -ENOMEM; free ret with growth_decision_done().
 */
int capacity_growth_decide(const Pool *p, const VolumeObservation *v, const Observation *obs, const GrowthEnv *env,
                           GrowthDecision *ret);
void growth_decision_done(GrowthDecision *d);

/* What growth may still add to v, by the same rules as the decision
 * (max_size, the grow's capability, the host's room beyond its reserve),
 * whatever v's usage: the free space placement and /v1/capacity may count
 * on. 0 when growth is off or cannot happen. */
uint64_t capacity_growable(const Pool *p, const VolumeObservation *v, const Observation *obs, const GrowthEnv *env);

/* ---- health.c ----------------------------------------------------------- */

typedef struct VolumeFinding {
    VolumeHealth level;
    const char *code;         /* "full", "inodes-filling", "fs-shutdown", ... */
    char *message;            /* names the volume, the figure, what to do */
} VolumeFinding;

typedef struct VolumeAssessment {
    VolumeHealth health;      /* the worst finding's; OK with none */
    VolumeFinding *findings;  /* worst first */
    size_t n;
} VolumeAssessment;

/* What the caller knows that an observation does not. */
typedef struct HealthInputs {
    const char *out_of_service; /* why the volume is down (the last apply), or NULL */
    int probe_error;          /* errno of the latest flush probe, 0 */
    bool growing;             /* a grow of this volume is running or queued */
    const GrowthDecision *growth; /* the latest growth decision, or NULL */
    const char *growth_error; /* the last grow failed: why, or NULL */
    /* A content shard: objects that workspaces reference and it does not
     * have (their daemons say so), how many workspaces, one digest. */
    uint64_t objects_missing;
    unsigned missing_workspaces;
    const char *missing_example;
} HealthInputs;

/*
 * Judges one volume: out of service (FAILED); objects workspaces reference
 * missing from a content shard (DEGRADED, "objects-missing"); direct I/O refused, VDO
 * read-only or its index in error, the filesystem read-only, emergency_ro
 * or shut down, filesystem errors recorded, the flush probe failing (ENOSPC,
 * EROFS), past capacity.critical, growth refused or failing (DEGRADED);
 * past capacity.warn (WARNING, unless growth will take care of it).
 * p may be NULL (a volume the layout no longer declares: default
 * thresholds). Returns 0 or -ENOMEM.
 */
int capacity_assess(const Pool *p, const VolumeObservation *v, const HealthInputs *in, VolumeAssessment *ret);
void volume_assessment_done(VolumeAssessment *a);

/* ---- slots.c ------------------------------------------------------------ */

/* Whether state volume v of pool p takes another workspace now: in
 * service, measured, health ok or warning, a workspace's reserve of bytes
 * free (growable: what growth can still add) and of inodes. The
 * per-volume workspace limit is the caller's to count. */
bool capacity_volume_accepts(const Pool *p, const VolumeObservation *v, VolumeHealth health, uint64_t growable);

/* New volumes of pool p the host can still hold: p's max_volumes less the
 * `existing` ones and the `refused` indexes (taken for good), and no more
 * than the host filesystem holds beyond its reserve (a pool with a
 * device). *ret_limit (may be NULL): what limits it, "max_volumes",
 * "refused" or "host-space". */
unsigned capacity_pool_carvable(const Pool *p, const Observation *obs, unsigned existing, unsigned refused,
                                const char **ret_limit);

/* ---- report.c ------------------------------------------------------------ */

/* One declared volume of a pool, as the agent knows it. */
typedef struct CapacityReportVolume {
    const VolumeObservation *observation;
    VolumeHealth health;
    uint64_t growable;           /* what growth may still add (capacity_growable;
                                    0 while growth is refused or failing) */
    size_t workspaces;           /* workspaces placed on it (active or being created) */
    uint64_t quota_bytes;        /* the quotas of its active workspaces */
    bool quota_enforced;         /* mounted with project quotas enforced */
} CapacityReportVolume;

/* /v1/capacity's figures for one pool. The fields after growable_bytes
 * are the state pool's (0 for the others). */
typedef struct CapacityPoolReport {
    unsigned volumes;
    uint64_t size_bytes, used_bytes, free_bytes; /* of the measured volumes */
    uint64_t growable_bytes;
    unsigned volumes_accepting;  /* take a workspace now (capacity_volume_accepts, below the limit) */
    unsigned refused_volumes;    /* indexes taken for good */
    unsigned carvable_volumes;   /* capacity_pool_carvable */
    const char *carvable_limit;  /* ... and what limits it (static) */
    uint64_t carvable_bytes;
    uint64_t workspaces;
    uint64_t workspace_slots;    /* max_volumes x workspaces_per_volume */
    uint64_t workspace_slots_free; /* on accepting volumes, and on the carvable ones */
    uint64_t quota_bytes;        /* promised to workspaces */
    uint64_t quota_bytes_free;   /* what the enforcing volumes may still promise
                                    under quota_overcommit */
} CapacityPoolReport;

/*
 * Sums pool p's n declared volumes into *ret: bytes, what growth may add,
 * and for the state pool the workspaces' slots (a slot counts only on a
 * volume that takes workspaces now, and on volumes yet to carve if the
 * pool's limit, the `refused` indexes and the host filesystem's room in obs
 * allow them) and the quotas. obs may be NULL.
 */
void capacity_pool_report(const Pool *p, const Observation *obs, const CapacityReportVolume *volumes, size_t n,
                          unsigned refused, CapacityPoolReport *ret);

/* ---- problems.c --------------------------------------------------------- */

/* A workspace's daemon, as far as problems go. */
typedef enum ProblemDaemonState {
    PROBLEM_DAEMON_OK,         /* running, starting, stopping: nothing to say */
    PROBLEM_DAEMON_BACKOFF,    /* died, restarted after a backoff */
    PROBLEM_DAEMON_CRASH_LOOP, /* hit its crash-loop limit: waits for a restart */
    PROBLEM_DAEMON_BLOCKED,    /* not started: its volumes are out of service */
} ProblemDaemonState;

typedef struct ProblemVolume {
    const char *name;
    const VolumeAssessment *assessment; /* the latest; may be NULL */
} ProblemVolume;

typedef struct ProblemWorkspace {
    const char *id;
    ProblemDaemonState state;
    uint64_t objects_missing;    /* its daemon's count (0: none, or not known) */
    const char *missing_example; /* one of those digests, or NULL */
    const char *blocker;         /* BLOCKED: why, worded, or NULL */
    uint64_t quota_used;         /* bytes charged to its project quota, */
    uint64_t quota_limit;        /* of this limit (0: none, or not read) */
} ProblemWorkspace;

typedef struct ProblemInputs {
    const ProblemVolume *volumes; /* every assessed volume */
    size_t n_volumes;
    const Observation *observation; /* the cached one (may be NULL) */
    const StateRecord *record;   /* may be NULL */
    const ApplyResult *results;  /* per volume: the latest outcome (may be NULL) */
    const ProblemWorkspace *workspaces;
    size_t n_workspaces;
    const char *root;            /* the layout's root: names the host's problems */
    const Pool *state_pool;      /* its growth.host_reserve (NULL: the default) */
    int record_save_error;       /* the last save of the record: <0 failed */
    const char *record_path;
    const char *reload_error;    /* why the last reload was refused, or NULL */
} ProblemInputs;

/*
 * The problems an operator must see, each naming what it is about
 * ("volume", "workspace", "host", or nothing), how bad (level: warning,
 * degraded, failed), a stable code and what to do: the findings of
 * observed volumes the layout declares or the record holds, refused
 * volumes not in service, an apply's notes and refused changes, daemons in
 * a crash loop, backing off, blocked or missing objects, a host short of
 * room, an unsaved record, a refused reload. *ret: a JSON array; *ret_worst
 * (may be NULL): the worst level (OK with none).
 * Returns 0 or -ENOMEM.
 */
int capacity_problems(const ProblemInputs *in, json_object **ret, VolumeHealth *ret_worst);
