/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The agent: one sd-event loop that wires the engine layers together.
 *
 *   agent.c             lifecycle: start, signals, reload, stop, sd_notify
 *   agent-volumes.c     volumes: apply at start and reload, carving, observation,
 *                       the flush probe
 *   agent-workspaces.c  workspaces: placement + supervision of their daemons
 *   agent-api.c         the ApiOps the status API calls (JSON views, metrics)
 *
 * Everything runs on the loop's one thread. The record (src/state) is owned
 * here and saved through the engine layers after every change.
 */

#include <systemd/sd-event.h>

#include "api.h"
#include "apply.h"
#include "layout.h"
#include "metrics.h"
#include "observe.h"
#include "state.h"
#include "supervisor.h"

typedef struct AgentOptions {
    const char *layout;          /* file or directory (layouts.d) */
    const char *root;            /* overrides the layout's root */
    const char *socket;          /* overrides api.socket */
    bool no_workspaces;          /* volumes only (no FUSE daemons) */
} AgentOptions;

/* The flush cost of one volume, measured by the probe. */
typedef struct FlushProbe {
    char *volume;
    bool has_last;
    usec_t last;                 /* the latest write+fsync of 4 KiB */
    usec_t at;                   /* CLOCK_REALTIME of that sample */
    int last_error;
    MetricsHistogram histogram;  /* seconds */
} FlushProbe;

typedef struct Agent {
    sd_event *event;
    AgentOptions options;

    Layout *layout;
    char *layout_path;
    char *layout_hash;
    uint64_t generation;         /* layouts applied since start (1 = first) */
    char *last_reload_error;     /* NULL when the last reload succeeded */
    usec_t last_reload_at;

    char *record_path;
    int lock_fd;                 /* <root>/layoutd-state.lock, held while we run */
    StateRecord *record;
    ApplyResult *last_apply;     /* per-volume outcome of the latest apply */

    Supervisor *supervisor;
    Api *api;
    char *socket_path;

    usec_t started_mono;
    bool ready;
    bool stopping;

    FlushProbe *probes;
    size_t n_probes;
    sd_event_source *probe_timer;
    pid_t probe_pid;             /* a probe child running, or 0 */
    int probe_pipe;
    sd_event_source *probe_child;
    char **probe_volumes;        /* volumes of the running probe, in order */

    uint64_t api_creates, api_create_failures;

    struct AgentVdo *vdo;        /* agent-vdo.c: monitor + fstrim, NULL without vdo-xfs */
} Agent;

/* agent.c */
int agent_new(const AgentOptions *o, Agent **ret);
Agent *agent_free(Agent *a);
DEFINE_TRIVIAL_CLEANUP_FUNC(Agent *, agent_free)
int agent_run(Agent *a);
int agent_reload(Agent *a, char **ret_error);
void agent_update_status(Agent *a);

/* agent-volumes.c */
int agent_volumes_apply(Agent *a);
int agent_volumes_observe(Agent *a, Observation **ret);
int agent_carve(void *userdata, PoolRole role, unsigned index, char **ret_volume_name);
int agent_flush_probe_start(Agent *a);
void agent_flush_probe_stop(Agent *a);
FlushProbe *agent_flush_probe_find(Agent *a, const char *volume);
/* Entry point of `layoutd --flush-probe DIR...` (the probe's child). */
int agent_flush_probe_child(int argc, char **argv);
size_t agent_volumes_up(Agent *a);

/* agent-workspaces.c */
int agent_workspaces_start(Agent *a);
int agent_workspace_spawn(Agent *a, const WorkspaceRecord *w);
struct PlaceContext;
void agent_place_context(Agent *a, struct PlaceContext *ret);
extern const SupervisorCallbacks agent_supervisor_callbacks;
void agent_persist(Agent *a);

/* agent-vdo.c: vdo-xfs volumes (stats in the API and metrics, periodic
 * fstrim in a child, read-only mode marks the volume degraded). */
typedef struct AgentVdo AgentVdo;
struct PlaceVolumeObservation;
void agent_vdo_observe_fixup(Agent *a, Observation *obs);
void agent_vdo_volume_json(Agent *a, const VolumeObservation *v, json_object *o);
void agent_vdo_metrics(Agent *a, const Observation *obs, MetricsWriter *w);
int agent_vdo_place_observe(void *userdata, const VolumeRecord *v, const char *mount_path,
                            struct PlaceVolumeObservation *ret);
int agent_vdo_start(Agent *a);
void agent_vdo_stop(Agent *a);

/* agent-api.c */
extern const ApiOps agent_api_ops;
int agent_api_start(Agent *a);
