/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The agent: one sd-event loop that decides and answers. Device work never
 * runs here: every engine verb (apply, carve, grow, observe, the flush
 * probe, destroying a workspace's data) runs in a worker child process
 * (src/engine/worker.h) whose exit is an event, and the API serves a
 * cached observation.
 *
 * The core:
 *   agent.c             lifecycle: start, signals, reload, stop, sd_notify;
 *                       the module table (agent_modules[]); events
 *                       (agent_event, into the API's event ring); the
 *                       problems (capacity_problems), /v1/status,
 *                       /v1/health and the metrics
 *   agent-jobs.c        the volume jobs: workers, one per volume at a time,
 *                       their record changes saved here, results merged
 *   agent-volumes.c     the cached observation (refreshed on mountinfo
 *                       changes, job results and a timer; merged by
 *                       engine_merge_observation), a volume's API
 *                       object, the content pool's arguments
 *   agent-api.c         the API's route table: each handler hands over
 *                       to the core or to a module's operation
 *
 * The modules: each defines one AgentModule row (start, layout_changed,
 * stop, free, observed, volume_json, metrics, problems, status_json,
 * assessment, daemon_running, workspace_removed), which is how the core
 * calls it; its state is its own, behind an opaque pointer in Agent.
 *   agent-capacity.c    full volumes: growth jobs, the fast capacity watch,
 *                       each volume's health, its findings and their
 *                       transitions (logged, sent as events); /v1/capacity
 *                       (capacity_pool_report)
 *   agent-probe.c       the flush probe (a worker every interval), the
 *                       daemons' own figures
 *   agent-workspaces.c  placement, carving on demand, supervision; the
 *                       create / remove / restart operations
 *   agent-gc.c          the content pool's sweep (a child), on a timer, when
 *                       the pool runs low, and on POST /v1/gc
 *   agent-check.c       the content pool's check (POST /v1/check)
 *   agent-cgroups.c     a systemd scope (cgroup) per daemon, with limits;
 *                       its CPU, memory, I/O and pressure
 *   agent-vdo.c         vdo-xfs: periodic fstrim, mode changes logged
 * Some modules still call another's functions directly: see the comment
 * above AgentModule, and docs/architecture.md.
 *
 * The record (src/state) is owned here (engine->record) and saved after
 * every change; workers hand their changes over (agent-jobs.c).
 */

#include <systemd/sd-event.h>

#include "agent-record-saver.h"
#include "api.h"
#include "capacity.h"
#include "cgroup.h"
#include "engine.h"
#include "layout.h"
#include "metrics.h"
#include "supervisor.h"
#include "worker.h"

typedef struct AgentOptions {
    const char *layout;          /* file or directory (layouts.d) */
    const char *root;            /* overrides the layout's root */
    const char *socket;          /* overrides api.socket */
    bool no_workspaces;          /* volumes only (no FUSE daemons) */
} AgentOptions;

/* What a workspace's daemon says of itself (its stats file, read with the
 * flush probe): the objects its files reference that the pool lacks. */
typedef struct DaemonStats {
    char *id;
    bool known;                  /* the file was read */
    uint64_t objects_missing;    /* distinct objects, since the daemon started */
    uint64_t missing_eio;        /* opens answered EIO because of them */
    char **missing;              /* the first few digests */
} DaemonStats;

/* The flush cost of one volume, measured by the probe. */
#define FLUSH_PROBE_RECENT 3
typedef struct FlushProbe {
    char *volume;
    bool has_last;
    usec_t last;                 /* the latest write+fsync of 4 KiB */
    usec_t at;                   /* CLOCK_BOOTTIME of that sample: only
                                    its age is read, which a clock step
                                    must not change and a suspend must
                                    not hide */
    int last_error;              /* errno of the latest probe, 0 */
    usec_t recent[FLUSH_PROBE_RECENT]; /* the latest samples, newest first,
                                    since the last failure */
    unsigned n_recent;
    MetricsHistogram histogram;  /* seconds */
} FlushProbe;

typedef struct VolumeJob VolumeJob;
typedef struct AgentCgroups AgentCgroups;
typedef struct AgentWorkspaces AgentWorkspaces;
typedef struct AgentVdo AgentVdo;
typedef struct AgentCheck AgentCheck;
typedef struct AgentCapacity AgentCapacity;
typedef struct AgentProbe AgentProbe;
typedef struct AgentQuota AgentQuota;
typedef struct JobEnded JobEnded;

typedef struct Agent {
    sd_event *event;
    AgentOptions options;
    Engine *engine;              /* layout, record, the root's lock, and the
                                    cached observation (engine->observation) */
    RecordSaver *saver;          /* writes engine->record, off the loop */
    RecordSaverWaiter *exit_wait; /* agent_exit_when_idle: saves land first */
    uint64_t generation;         /* layouts applied since start (1 = first) */
    char *last_reload_error;     /* NULL when the last reload succeeded */
    usec_t last_reload_at;
    char **reload_notes;         /* what the last reload refused to change */
    char *last_status;           /* the last STATUS= sent to systemd */

    ApplyResult *volume_results; /* per volume: the latest outcome */
    AgentCapacity *capacity;     /* agent-capacity.c: growth, health, the fast watch */
    struct AgentGc *gc;          /* agent-gc.c; NULL without a sweep */
    AgentCgroups *cgroups;       /* agent-cgroups.c */

    /* Volume jobs (agent-jobs.c): running, then queued, in order. */
    VolumeJob *jobs;
    sd_event_source *jobs_start; /* starts the next startable job, one per iteration */
    uint64_t job_seq;            /* counts ended volume jobs */
    uint64_t job_all_seq;        /* job_seq when a job on every volume last ended */
    JobEnded *jobs_ended;        /* per volume: job_seq when a job on it last ended */
    size_t n_jobs_ended;

    /* The observation refresh (agent-volumes.c). */
    Worker *observer;
    char **gone_volumes;         /* reclaimed: dropped from every observation merged
                                    later (one taken before the end would show them) */
    bool observe_again;
    uint64_t observe_start_seq;  /* job_seq when the running refresh started */
    sd_event_source *observe_timer;
    struct MountMonitor *mount_monitor; /* the mount table's changes */
    struct BlockMonitor *block_monitor; /* udev block events, when udevd runs */
    sd_event_source *block_source;

    Supervisor *supervisor;
    Api *api;
    char *socket_path;
    ino_t socket_ino;            /* the socket file it bound, 0 if none */
    char *readonly_socket_path;  /* api.readonly_socket, when it serves one */
    ino_t readonly_socket_ino;

    usec_t started_mono;
    bool volumes_started;        /* the start's apply has ended (a volume
                                    down before that is not up yet, not
                                    failed) */
    bool ready;
    usec_t start_extend_until;   /* CLOCK_MONOTONIC: no EXTEND_TIMEOUT_USEC after it */
    bool stopping;
    bool exit_after_jobs;        /* stopping: exit once the last job ended */
    bool shutdown_stop_workspaces; /* POST /v1/shutdown's choice */

    AgentProbe *probe;           /* agent-probe.c: flush costs, daemons' figures */
    AgentQuota *quota;           /* agent-quota.c: quota usage, read with the probe */

    AgentWorkspaces *workspaces; /* agent-workspaces.c: carves, waiters, counters */

    AgentVdo *vdo;               /* agent-vdo.c: fstrim; NULL without vdo-xfs */
    AgentCheck *check;           /* agent-check.c: the content pool's check */
} Agent;

/*
 * A module of the agent (agent-<name>.c). The core (agent.c, the jobs,
 * the cached observation) calls a module through its row in
 * agent_modules[] (agent.c), as the engine calls a backend through
 * volume_backends[]: a module's state is its own (an opaque pointer in
 * Agent), and a module calls down into the core, never into another
 * module's row. Every op may be NULL. agent-api.c, the route table,
 * hands each route to its module's operation. Not there yet (the same
 * list is in docs/architecture.md):
 *   - the core hands agent-workspaces.c's agent_supervisor_callbacks to
 *     the supervisor it makes;
 *   - capacity reads the probe's figures (agent_flush_probe_find,
 *     agent_content_missing);
 *   - the probe reads quota usage for the quota module
 *     (agent_quota_probe_args, agent_quota_merge);
 *   - quota answers PUT .../quota with agent_workspace_json;
 *   - workspaces calls capacity (agent_capacity_growable), cgroups
 *     (agent_cgroups_workspace_json), the probe
 *     (agent_daemon_stats, agent_daemon_stats_path) and quota
 *     (agent_quota_workspace_json, agent_quota_problems).
 */
typedef struct AgentModule {
    const char *name;
    /* Starts it: at agent_run (when_up false), or once the volumes are up
     * and again after every reload's apply (when_up: then it must be
     * idempotent). A failure is the module's to log; the agent goes on. */
    bool when_up;
    int (*start)(Agent *a);
    /* A reload's apply is done (or failed; the new layout is in place
     * either way), before the reload is answered: called if set, instead
     * of start (so it calls start itself if it needs to); if not set, a
     * when_up module's start is called again. */
    void (*layout_changed)(Agent *a);
    /* agent_stop: what must not run on while the agent stops. */
    void (*stop)(Agent *a);
    /* agent_free: everything goes (the loop is over). */
    void (*free)(Agent *a);
    /* The cached observation changed (agent_volumes_changed). */
    void (*observed)(Agent *a);
    /* Adds what only it knows to a volume's API object o. */
    void (*volume_json)(Agent *a, const VolumeObservation *v, json_object *o);
    /* Its metric families (GET /metrics). */
    void (*metrics)(Agent *a, MetricsWriter *w);
    /* Hands its part of the problems' inputs to in (valid until its next
     * call). Returns 0 or -ENOMEM. */
    int (*problems)(Agent *a, ProblemInputs *in);
    /* Adds its key to /v1/status's object (docs/api.md). */
    void (*status_json)(Agent *a, json_object *status);
    /* The latest assessment of a volume, or NULL when it was never
     * observed: the module that judges volumes' health (capacity). */
    const VolumeAssessment *(*assessment)(Agent *a, const char *volume);
    /* A volume's recent flush cost, as placement weighs it: true with
     * *ret set, false when there is none (the module that measures it:
     * the probe). */
    bool (*flush_cost)(Agent *a, const char *volume, usec_t *ret);
    /* A workspace's daemon runs, started or re-adopted (pid > 0). */
    void (*daemon_running)(Agent *a, const char *id, pid_t pid);
    /* A workspace was removed: what the module keeps of it goes. */
    void (*workspace_removed)(Agent *a, const char *id);
} AgentModule;

extern const AgentModule agent_capacity_module;
extern const AgentModule agent_gc_module;
extern const AgentModule agent_cgroups_module;
extern const AgentModule agent_vdo_module;
extern const AgentModule agent_probe_module;
extern const AgentModule agent_check_module;
extern const AgentModule agent_workspaces_module;
extern const AgentModule agent_quota_module;

/* agent-quota.c */
/* The probe's "quotas" argument: the workspaces whose usage to read. */
json_object *agent_quota_probe_args(Agent *a);
/* The probe's answer (borrowed) into the module's cache. */
void agent_quota_merge(Agent *a, json_object *quotas);
/* A workspace's "quota" object: {limit_bytes, used_bytes, limit_inodes,
 * used_inodes, enforced_by, project_id}. */
json_object *agent_quota_workspace_json(Agent *a, const WorkspaceRecord *w);
/* The volume is mounted with project quotas enforced (the cached
 * observation's mount options). */
bool agent_quota_volume_enforces(Agent *a, const char *volume);
/* Sets *ret_used and *ret_limit from the latest read when the workspace
 * has a quota and its usage is known (else leaves them); returns 1 when
 * it uses 90 % or more of it, else 0. */
int agent_quota_problems(Agent *a, const WorkspaceRecord *w, uint64_t *ret_used, uint64_t *ret_limit);
/* Changes a workspace's quota online (a worker job); op ends with the
 * workspace. Returns: 1 (under way), -ENOENT, -EOPNOTSUPP (501: cannot be
 * enforced here), -errno, with err set. */
int agent_quota_set(Agent *a, const char *id, uint64_t bytes, ApiOperation *op, ApiError *err);

/* The binary the workers run: this one, as it is running now (a package
 * upgrade replaces the file, not the running inode). */
#define AGENT_SELF_EXE "/proc/self/exe"

/* agent.c */
int agent_new(const AgentOptions *o, Agent **ret);
Agent *agent_free(Agent *a);
DEFINE_TRIVIAL_CLEANUP_FUNC(Agent *, agent_free)
int agent_run(Agent *a);
/* Reloads the layout: refused (and kept running) when invalid; otherwise
 * the difference is applied by a job. op (may be NULL) ends when done. */
int agent_reload(Agent *a, ApiOperation *op, char **ret_error);
/* Stops the agent (signals, POST /v1/shutdown): the daemons stopped first,
 * or left serving for the next agent to re-adopt. */
void agent_stop(Agent *a, bool stop_workspaces, const char *why);
void agent_update_status(Agent *a);
/* The start is over (volumes up, workspaces supervised): READY=1, the API
 * takes changes. Once; not while stopping. */
void agent_ready(Agent *a);
/* The loop ends once no volume job runs and the record is saved (the
 * answers waiting on that go out first). */
void agent_exit_when_idle(Agent *a);
/* The modules (agent_modules[], in agent.c): the observation changed; a
 * volume's API object gets what each of them knows. */
void agent_modules_observed(Agent *a);
void agent_modules_volume_json(Agent *a, const VolumeObservation *v, json_object *o);
/* The latest assessment of a volume (the first module's answer that
 * has the op), or NULL. */
const VolumeAssessment *agent_modules_assessment(Agent *a, const char *volume);
/* A volume's recent flush cost (the first module's answer that has the
 * op): true with *ret set, false when none is known. */
bool agent_modules_flush_cost(Agent *a, const char *volume, usec_t *ret);
/* The workspaces module's news for the others: a daemon runs (cgroups
 * puts it into its scope), a workspace was removed. */
void agent_modules_daemon_running(Agent *a, const char *id, pid_t pid);
void agent_modules_workspace_removed(Agent *a, const char *id);
/* The problems an operator must see (capacity_problems over what the core
 * and the modules know); *ret_health the worst level. */
json_object *agent_problems(Agent *a, VolumeHealth *ret_health);
/* GET /v1/status: the agent's state, layout, volumes by health, daemons
 * by state, jobs, the last refused reload, health and problems, and what
 * the gc, cgroups and quota modules say (docs/api.md). NULL: out of
 * memory. */
json_object *agent_status_json(Agent *a);
/* GET /v1/health: {health, problems}; *ret_status 200 when the host
 * serves as asked (ready, nothing worse than a warning), else 503. NULL:
 * out of memory. */
json_object *agent_health_json(Agent *a, unsigned *ret_status);
/* Every metric family (GET /metrics): the core's, then each module's. */
int agent_metrics(Agent *a, MetricsWriter *w);
/* Appends an event to the event ring behind GET /v1/events (when the
 * API runs): type ("volume.health", ...) and its fields (taken; may be
 * NULL). Every module sends its events through here. */
void agent_event(Agent *a, const char *type, json_object *fields);
/* The layout and the record, for short. */
static inline const Layout *agent_layout(const Agent *a) {
    return a->engine->layout;
}
static inline StateRecord *agent_record(const Agent *a) {
    return a->engine->record;
}
/* Queues the record for writing on the saver thread (agent-record-
 * saver.h): the change is durable soon after, not when this returns. A
 * failure is logged (the change stays in memory and goes out with the
 * next save). */
void agent_persist(Agent *a);
/* done(error, userdata) from the loop once every change made so far is
 * durable (error <0: saving it failed). *ret (may be NULL): the handle to
 * cancel it with record_saver_waiter_cancel() before it ran. */
int agent_when_saved(Agent *a, RecordSaverDone done, void *userdata, RecordSaverWaiter **ret);
/* Ends op with status and result (taken) once every change made so far
 * is durable: an answer promises what it says is on disk. When saving
 * failed, op fails with a 500 that says so instead. */
void agent_operation_succeed_saved(Agent *a, ApiOperation *op, unsigned status, json_object *result);

/* agent-jobs.c */
typedef void (*VolumeJobDone)(Agent *a, int error, const char *message, ApplyResult *result, json_object *extra,
                              void *userdata);
/*
 * Queues a job: a worker running `op` (WORKER_OP_*) with args (taken) on
 * `volume` (NULL: all of them). Jobs on the same volume, and any job with a
 * job on all volumes, run one after the other; the others at once. When it
 * ends its record changes are saved already and its observation is merged
 * into the cache; then done runs (may be NULL; result and extra are
 * borrowed for the call), and after it the result is merged into
 * volume_results (or, AGENT_JOB_OWN_RESULT, freed). op (may be NULL) gets
 * a step per engine step.
 * Returns: -ENOMEM, 0.
 */
int agent_job_submit(Agent *a, const char *op, json_object *args, const char *volume, ApiOperation *operation,
                     VolumeJobDone done, void *userdata);
typedef enum AgentJobFlags {
    /* The job's per-volume result is its caller's alone and is not merged
     * into volume_results (what the API says of the volume's apply): a
     * grow that fails leaves the volume in service. */
    AGENT_JOB_OWN_RESULT = 1U << 0,
} AgentJobFlags;
int agent_job_submit_full(Agent *a, const char *op, json_object *args, const char *volume, ApiOperation *operation,
                          unsigned flags, VolumeJobDone done, void *userdata);
/* Jobs running or queued. */
size_t agent_jobs_count(Agent *a);
/* A job runs now on this volume (or on every volume). */
bool agent_jobs_busy(Agent *a, const char *volume);
/* A job on this volume (or on every volume) ended after job_seq was seq. */
bool agent_jobs_ended_since(Agent *a, const char *volume, uint64_t seq);
/* Kills every job (the agent is going away). */
void agent_jobs_abandon(Agent *a);

/* agent-volumes.c */
/* Asks for a fresh observation (coalesced: one worker at a time). */
void agent_volumes_refresh(Agent *a);
int agent_volumes_watch(Agent *a);
void agent_volumes_unwatch(Agent *a);
/* The cached observation of a volume, or NULL. */
const VolumeObservation *agent_volume(Agent *a, const char *name);
size_t agent_volumes_up(Agent *a);
size_t agent_volumes_total(Agent *a);
/* The health of a volume ("ok", "warning", "degraded", "failed") and, when
 * not ok, its worst finding (owned by the volume's state). */
const char *agent_volume_health(Agent *a, const VolumeObservation *v, const char **ret_problem);
/* The observation changed: the modules are told (agent_modules[]: growth
 * is decided, health assessed and its transitions reported, blocked
 * workspaces start, ...). */
void agent_volumes_changed(Agent *a);
/* A volume is gone (reclaimed): it leaves the observation, the views and
 * the problems now, and stays out of observations taken before its end,
 * until the record holds a volume of that name again. */
void agent_volume_gone(Agent *a, const char *name);
/* Merges statfs figures ([{"path", "statfs_error", "fs_size", ...}], from
 * the capacity watch or the flush probe) into the cached observation. */
void agent_volumes_merge_statfs(Agent *a, json_object *list);
/* The volume's API object, with what only the agent knows. */
json_object *agent_volume_json(Agent *a, const VolumeObservation *v);
/* The content pool p's dirs and the roots that may hold references to
 * it, as the pool's tools (the sweep, the check) take them: --content
 * DIR[,DIR...] --state-root DIR... from the record and the cached
 * observation. Refused (-EBUSY, *ret_why) while a volume that may hold
 * references is out of service: a reference nobody can see looks like
 * none. Returns 0, -EBUSY, -ENOMEM. */
int agent_content_pool_args(Agent *a, const Pool *p, char ***ret, char **ret_why);

/* agent-capacity.c */
/* Bytes placement may count on a volume beyond its free space: what growth
 * can still add (0 when it cannot grow). */
uint64_t agent_capacity_growable(Agent *a, const VolumeObservation *v);
/* GET /v1/capacity: per pool, its bytes and how many more workspaces
 * really fit (capacity_pool_report over what the agent knows), and the
 * host filesystem's room (docs/api.md). NULL: out of memory. */
json_object *agent_capacity_json(Agent *a);

/* agent-cgroups.c */
/* A workspace's cgroup object, or NULL when it has none. */
json_object *agent_cgroups_workspace_json(Agent *a, const char *id);

/* agent-gc.c */
/* POST /v1/gc: a sweep now (dry_run: report only). Returns 1 (op goes on)
 * or <0 with err set. */
int agent_gc_run(Agent *a, bool dry_run, ApiOperation *op, ApiError *err);

/* agent-check.c */
/* POST /v1/check: the content pool's check now (every stub against the
 * pool). Returns 1 (op goes on) or <0 with err set. */
int agent_check_run(Agent *a, ApiOperation *op, ApiError *err);

/* agent-export.c: GET /v1/workspaces/{id}/export (the API handler), and
 * the worker that writes the archive (`layoutd --export-worker`). */
int agent_export_handler(void *userdata, ApiCall *call);
int agent_export_worker_main(int argc, char **argv);

/* agent-probe.c */
FlushProbe *agent_flush_probe_find(Agent *a, const char *volume);
/* A workspace's daemon's own figures, or NULL (never read). */
const DaemonStats *agent_daemon_stats(Agent *a, const char *id);
/* The objects missing from content shard `volume` that workspaces
 * reference, by their daemons' reports: the count (summed over the
 * workspaces), how many report any, and one digest. */
uint64_t agent_content_missing(Agent *a, const char *volume, unsigned *ret_workspaces, const char **ret_example);
/* The stats file the agent hands a workspace's daemon (LAYOUTD_STATS_FILE). */
int agent_daemon_stats_path(Agent *a, const char *id, char **ret);

/* agent-workspaces.c */
int agent_workspace_spawn(Agent *a, const WorkspaceRecord *w);
/* Whether W's daemon has a package store: while one runs, what it was
 * started with (LAYOUTD_STORE_DIR in its environment: an agent before an
 * upgrade, or a layout before a reload, may have decided otherwise than
 * the layout does now); else what its next start gets. */
bool agent_workspace_has_store(Agent *a, const WorkspaceRecord *w);
/* Hands the supervisor W's daemon spec again, from the layout and the
 * record as they are now (whether its next start gets a package store
 * depends on its quota, and on one being set); 0 when W is not
 * supervised. */
int agent_workspace_respec(Agent *a, const WorkspaceRecord *w);
/* Why the workspace's daemon may not start now (its state volume or a
 * content shard out of service), worded into buf; NULL when it may. */
const char *agent_workspace_blocker(Agent *a, const char *id, char *buf, size_t size);
struct PlaceContext;
/* The placement context over the cached observation (no device touched). */
void agent_place_context(Agent *a, struct PlaceContext *ret);
/* GET /v1/workspaces/{id}/placement: the decision a create of id (with
 * tenant, or NULL) would get now, and why, as `layoutctl why --json`
 * prints it; nothing carved or recorded. Returns: -errno, 0 with *ret. */
int agent_workspace_placement(Agent *a, const char *id, const char *tenant, json_object **ret);
extern const SupervisorCallbacks agent_supervisor_callbacks;
/* The operations behind POST/DELETE /v1/workspaces and restart: each ends
 * op when the daemon runs (or failed), stopped, or is back. Return 1 (the
 * operation goes on), 0 (done at once) or <0 with err set. */
int agent_workspace_create(Agent *a, const ApiWorkspaceRequest *req, bool queue, ApiOperation *op, ApiError *err);
int agent_workspace_remove(Agent *a, const char *id, bool destroy, ApiOperation *op, ApiError *err);
int agent_workspace_restart(Agent *a, const char *id, bool queue, ApiOperation *op, ApiError *err);
/* A workspace's "key=value" labels (strv, may be NULL) as a JSON object. */
json_object *agent_labels_json(char *const *labels);
/* The workspace's API object. */
json_object *agent_workspace_json(Agent *a, const WorkspaceRecord *w);

/* agent-api.c */
extern const ApiOps agent_api_ops;
int agent_api_start(Agent *a);
/* Stops serving and removes the socket file it made. */
void agent_api_stop(Agent *a);
/* A reload swapped the layout: applies what changed in api: (the
 * socket's mode and group) and says what waits for a restart. */
void agent_api_layout_changed(Agent *a, const ApiConfig *old);
