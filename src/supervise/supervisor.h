/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The Supervisor: one FUSE daemon per workspace, driven by the agent's
 * sd-event loop (docs/supervision.md).
 *
 * For each workspace it starts the daemon (spawn.c), waits for its FUSE mount
 * to appear in /proc/self/mountinfo (libmount's mnt_monitor: no polling),
 * restarts it with backoff when it dies (backoff.c), gives up after a crash
 * loop (state FAILED until supervisor_restart()), cleans the dead mount a
 * dead daemon leaves (fuse-cleanup.c), optionally watches for hung
 * connections, and re-adopts daemons that survived an agent restart. All
 * state transitions are in fsm.c.
 *
 * The library never prints: daemon output and its own messages go to
 * on_log. The identity of each daemon (pid, start time, boot, mount device,
 * restart count) goes to on_persist whenever it changes; the agent stores it
 * (DaemonRecord in src/state) and hands it back to supervisor_add() after
 * its own restart.
 *
 * supervisor_free() does NOT stop the daemons: they keep serving while the
 * agent restarts. Stopping them is supervisor_stop_all().
 */

#include <stdbool.h>
#include <systemd/sd-event.h>

#include "fsm.h"
#include "layout.h"
#include "state.h"

typedef struct Supervisor Supervisor;

/* What to run for one workspace. All pointers are borrowed for the call
 * (supervisor_add copies what it keeps). */
typedef struct WorkspaceSpec {
    const char *id;
    char *const *argv;          /* expanded (argv_template_expand); argv[0]
                                   absolute */
    const char *mountpoint;     /* created (0755) if missing */
    const char *user;           /* NULL = root */
    const char *group;          /* NULL = the user's primary group */
    char *const *environment;   /* extra "KEY=VALUE", may be NULL */
    unsigned shards;            /* LAYOUTD_SHARDS */
    RestartPolicy restart;
    usec_t backoff_initial;
    usec_t backoff_max;
    usec_t backoff_reset_after;
    unsigned crashloop_deaths;
    usec_t crashloop_interval;
    usec_t ready_timeout;
    usec_t stop_timeout;
    usec_t hang_timeout;        /* 0 = no hang watch */
    bool restart_on_hang;
    int oom_score_adjust;       /* the daemon's /proc/PID/oom_score_adj */
    /* The cache mount (cache-bind.h), NULL = none: cache_source bound at
     * <mountpoint>/<cache_name> after every start, before the workspace is
     * RUNNING, and checked (mounted again if missing) on re-adoption while
     * the daemon serves on; cache_owner_dir (the state dir) lends it owner,
     * mode and project id. A change takes effect at the next start or
     * re-adoption. */
    const char *cache_source;
    const char *cache_name;
    const char *cache_owner_dir;
} WorkspaceSpec;

typedef enum SupervisorCacheState {
    SUPERVISOR_CACHE_NONE,      /* no cache configured */
    SUPERVISOR_CACHE_PENDING,   /* not mounted now: no daemon runs, or its
                                   cache is being mounted */
    SUPERVISOR_CACHE_MOUNTED,
    SUPERVISOR_CACHE_FAILED,    /* the last attempt failed (cache_message);
                                   the workspace runs without it */
    _SUPERVISOR_CACHE_STATE_MAX,
    _SUPERVISOR_CACHE_STATE_INVALID = -EINVAL,
} SupervisorCacheState;

/* "none", "pending", "mounted", "failed" (the API's cache.state); NULL
 * for a value out of range. */
const char *supervisor_cache_state_to_string(SupervisorCacheState s);

/* Fills the policy fields of *spec (restart, backoff, crash loop, timeouts,
 * user, group, environment) from the layout; the caller sets id, argv,
 * mountpoint and shards. Pointers borrow from c. */
void supervisor_spec_from_config(WorkspaceSpec *spec, const WorkspaceConfig *c);

#define SUPERVISOR_DELAY_HISTORY 16

typedef struct WorkspaceStatus {
    const char *id;             /* borrowed: valid until the workspace is
                                   removed */
    SupervisorState state;
    pid_t pid;                  /* 0: none */
    bool adopted;               /* the running daemon was re-adopted */
    unsigned restarts;          /* DaemonRecord.restarts */
    bool exited;                /* the fields below are set */
    int exit_status;            /* exit code, -1 when killed or unknown */
    int exit_signal;            /* 0 when it exited normally or unknown */
    usec_t since;               /* CLOCK_MONOTONIC of the last state change */
    usec_t running_since;       /* CLOCK_MONOTONIC when RUNNING began, or 0 */
    usec_t ready_latency;       /* last spawn -> mount visible; 0 unknown */
    usec_t next_delay;          /* BACKOFF: the delay being waited out */
    usec_t delays[SUPERVISOR_DELAY_HISTORY]; /* last backoff delays, oldest
                                                first */
    unsigned n_delays;
    dev_t mount_dev;            /* the FUSE mount's device, 0 unknown */
    unsigned hangs;             /* hang reports so far */
    SupervisorCacheState cache_state;
    const char *cache_message;  /* borrowed; why FAILED, else NULL */
} WorkspaceStatus;

typedef struct SupervisorCallbacks {
    /* A line of daemon output (level LOG_INFO), or a message of the
     * supervisor about the workspace (LOG_NOTICE/LOG_WARNING/LOG_ERR). */
    void (*on_log)(const char *id, int level, const char *line, void *userdata);
    void (*on_state_change)(const char *id, SupervisorState old_state,
                            SupervisorState new_state, void *userdata);
    /* The daemon's identity changed: store *rec (pid 0 = not running). */
    void (*on_persist)(const char *id, const DaemonRecord *rec, void *userdata);
    /* The connection had requests waiting without a break for
     * hang_timeout. */
    void (*on_hang)(const char *id, unsigned waiting, void *userdata);
    /* May the workspace's daemon be spawned now? false: its volumes are
     * not in service, and it waits in BLOCKED until supervisor_unblock().
     * NULL: always. Called before every event; keep it cheap and pure. */
    bool (*may_start)(const char *id, void *userdata);
} SupervisorCallbacks;

/*
 * A supervisor on event loop e. runtime_dir (may be NULL) holds one FIFO per
 * workspace for the daemon's stdout/stderr: a FIFO, unlike a pipe, can be
 * reopened by the next agent, so the output of re-adopted daemons keeps
 * flowing. With NULL, anonymous pipes are used (output is lost after an
 * agent restart).
 * Returns: <0 on error, 0 with *ret.
 */
int supervisor_new(sd_event *e, const SupervisorCallbacks *cb, void *userdata,
                   const char *runtime_dir, Supervisor **ret);

/* Frees the supervisor, leaving every daemon and mount as they are (for
 * the next agent to re-adopt). Accepts NULL; returns NULL. */
Supervisor *supervisor_free(Supervisor *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(Supervisor *, supervisor_free)

/*
 * Adds a workspace and starts it. With adopt != NULL (the persisted record)
 * and adopt->pid != 0, the recorded daemon is re-adopted when it is still
 * the same process (pid + start time + boot) and its mount is healthy (a
 * FUSE mount at the mount point with the recorded device); a daemon that
 * is alive but unhealthy is stopped and restarted; a dead one's stale mount
 * is cleaned and it is restarted. The restart count carries over.
 * Returns: -EEXIST (id taken), -EINVAL, -ESRCH (user/group), -errno, 0.
 * A daemon that fails to start is not an error here: it is a state.
 */
int supervisor_add(Supervisor *s, const WorkspaceSpec *spec, const DaemonRecord *adopt);

/* Replaces what the workspace's next spawn runs (argv, environment, user,
 * policy) with spec's; the running daemon is left alone. A reload and a
 * restart so take the current layout's command, never the one the
 * workspace was created with. The mount point cannot change.
 * Returns: -ENOENT, -EINVAL, -ESRCH (user/group), -errno, 0 (on failure
 * the workspace keeps what it had). */
int supervisor_update(Supervisor *s, const WorkspaceSpec *spec);

typedef void (*SupervisorRemovedCallback)(Supervisor *s, const char *id, void *userdata);

/* Stops the workspace's daemon (SIGTERM, SIGKILL after stop_timeout,
 * mount cleaned) and forgets it; cb (may be NULL) runs from the event loop
 * once it is gone, just before the workspace is freed.
 * Returns: -ENOENT, -EALREADY (being removed), 0. */
int supervisor_remove(Supervisor *s, const char *id, SupervisorRemovedCallback cb, void *userdata);

/* Restarts the daemon (also the way out of FAILED; resets the crash-loop
 * tally). Returns: -ENOENT, -EBUSY (being removed/stopped by stop_all), 0. */
int supervisor_restart(Supervisor *s, const char *id);

/* Asks may_start again for every BLOCKED workspace (its volumes may be
 * back) and starts those it allows. Returns: how many left BLOCKED. */
size_t supervisor_unblock(Supervisor *s);

typedef void (*SupervisorDoneCallback)(Supervisor *s, void *userdata);

/* Stops every daemon in parallel. After total_timeout, whatever is still
 * running gets SIGKILL. cb runs from the event loop once all are STOPPED
 * (or FAILED). Returns: -EALREADY (a stop-all is in progress), -errno, 0. */
int supervisor_stop_all(Supervisor *s, usec_t total_timeout, SupervisorDoneCallback cb,
                        void *userdata);

/*
 * Unmounts every FUSE mount strictly below mount_root that no supervised
 * workspace owns (its device is not a supervised workspace's mount): the
 * dead mounts of daemons that died while no agent was watching, or of
 * workspaces the record forgot. Call after adding (adopting) all
 * workspaces. Returns: <0 on error, else the number of mounts cleaned;
 * each is also reported through on_log (id NULL).
 */
int supervisor_sweep_stale(Supervisor *s, const char *mount_root);

/* The value of key in the environment the workspace's running daemon was
 * started with (what it got then, whatever updates came since): the
 * supervisor's own copy for a daemon it started; a re-adopted daemon's is
 * read from /proc/<pid>/environ once, on the first call, and kept.
 * Returns: -ENOENT (no such workspace), -ESRCH (no daemon runs, or it is
 * gone), -errno, 0 (key not set; *ret NULL), 1 (*ret: a copy of the
 * value, the caller frees it). */
int supervisor_daemon_getenv(Supervisor *s, const char *id, const char *key, char **ret);

/* Status of one workspace. Returns: -ENOENT, 0 with *ret. */
int supervisor_get_status(Supervisor *s, const char *id, WorkspaceStatus *ret);

/* Iteration for the API/metrics: number of workspaces, and the status of
 * the i-th (any order, stable while nothing is added or removed).
 * Returns: -ENOENT (i out of range), 0. */
size_t supervisor_count(Supervisor *s);
int supervisor_get_status_by_index(Supervisor *s, size_t i, WorkspaceStatus *ret);
