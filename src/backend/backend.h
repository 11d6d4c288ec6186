/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The volume backends: one ops table per backend (dir, the loop backends,
 * vdo-xfs), in the manner of the kernel's file_operations and
 * stratisd's engine trait. Everything that differs between backends is
 * behind these ops, and nothing outside src/backend/backend-<name>*.c
 * branches on a Backend value: the drivers (observe, plan, apply,
 * teardown, repair) look the table up and call through it.
 *
 * Adding a backend: a file set backend-<name>.c (observe, apply_step,
 * rollback, teardown, to_json, metrics, maintenance) and
 * backend-<name>-plan.c (the pure planner), one entry in volume_backends[]
 * (backends.c), one entry in the layout's Backend enum, names and traits.
 * A loop backend on another filesystem is only the last two and an FsType
 * row: its entry is &loop_backend. docs/architecture.md walks through it.
 *
 * The plan ops are pure (they read their arguments only); the others do
 * device work and run only in layoutctl or in the agent's workers.
 * Library code: 0 / -errno, never logs.
 */

#include <json-c/json.h>

#include "metrics.h"
#include "observation.h"
#include "plan.h"
#include "setup.h"

typedef struct TeardownOptions {
    bool destroy_data;       /* also delete backing files, mount dirs, the record */
    bool lazy;               /* MNT_DETACH when the unmount stays busy */
    bool remove_workspaces;  /* with destroy_data: active workspaces go too */
    const char *only;        /* this volume alone (the agent's reclaim of an
                                empty state volume); NULL: every one */
} TeardownOptions;

/* Work a volume wants now and then, outside any plan: the agent only
 * schedules it, the backend says what and how often (vdo-xfs: fstrim,
 * since online discard stalls XFS on VDO, dm-vdo/vdo#57). */
typedef struct VolumeMaintenance {
    const char *name;        /* "fstrim": for the log and the API */
    usec_t interval;         /* how often; 0: none */
    const char *package;     /* has argv[0]: "not found: install ..." */
    char **argv;             /* the command for this volume now (argv[0]
                                looked up in PATH), or NULL: none, or the
                                volume cannot take it now (not up) */
} VolumeMaintenance;

void volume_maintenance_done(VolumeMaintenance *m);

typedef struct VolumeBackend {
    /* Reads what exists of the volume into *o. The common fields (name,
     * role, index, backend, declared, mount_path, dir_exists, mounted,
     * mount) are filled already; the driver fills statvfs afterwards when
     * volume_observation_is_up(). Per-volume problems go into the
     * observation's fields, not into the return value.
     * Returns: -ENOMEM, -errno on unexpected failures, 0. */
    int (*observe)(const Layout *l, const VolumeSpec *spec, VolumeObservation *o);

    /* Pure: the steps (and refusals, drift) that would make the declared
     * volume o match pool p. rec is the volume's record entry, or NULL. */
    void (*plan)(PlanBuilder *b, const PlanSubject *subj, const Pool *p, const VolumeRecord *rec,
                 const VolumeObservation *o);

    /* Pure: the steps that grow the volume to new_size bytes online, or
     * a REFUSE entry saying why it cannot. NULL: the backend does not grow. */
    void (*plan_grow)(PlanBuilder *b, const PlanSubject *subj, const Pool *p, const VolumeRecord *rec,
                      const VolumeObservation *o, uint64_t new_size);

    /* Carries out one action step. Sets sr->changed and, on failure or
     * for a note, sr->message. Returns: <0 on error (the driver rolls the
     * volume back), 0. */
    int (*apply_step)(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr);

    /* Undoes what this run made for the volume (s->undo_*). */
    void (*rollback)(VolumeSetup *s);

    /* Pure: what a teardown does to this recorded volume: the steps that
     * take it out of service (UNMOUNT, DM_REMOVE, DETACH) and, with
     * opts->destroy_data, the DELETE steps; or a blocking REFUSE when it
     * must be left alone (its device mounted where layoutd did not mount
     * it). o may be NULL (not observed). */
    void (*plan_teardown)(PlanBuilder *b, const PlanSubject *subj, const VolumeRecord *rec,
                          const VolumeObservation *o, const TeardownOptions *opts);

    /* Takes a recorded volume out of service: unmount, dm remove, loop
     * detach. Deletes nothing (a teardown destroys only once every volume
     * is out of service). Steps and failures go to s->result. o may be
     * NULL (not observed). */
    void (*teardown)(VolumeSetup *s, const VolumeObservation *o, const TeardownOptions *opts);

    /* --destroy-data, once every volume of the teardown is out of service:
     * deletes what layoutd created for the volume (its backing file, its
     * directory). Steps and failures go to s->result. */
    void (*destroy)(VolumeSetup *s, const VolumeObservation *o);

    /* Adds the backend's own fields to a volume's API object (the "vdo"
     * object, say); may downgrade "health". NULL: nothing to add. */
    void (*to_json)(const Pool *p, const VolumeObservation *o, json_object *j);

    /* Writes the backend's own metric families over the volumes of obs
     * that are its own. NULL: none. */
    void (*metrics)(const Observation *obs, MetricsWriter *w);

    /* Pure: the periodic maintenance the volumes of pool p want (see
     * VolumeMaintenance); o, when not NULL, is the volume the command is
     * for. NULL: the backend needs none. Returns: -ENOMEM, 0. */
    int (*maintenance)(const Pool *p, const VolumeObservation *o, VolumeMaintenance *ret);
} VolumeBackend;

/* The ops of a backend (never NULL for a valid Backend; NULL otherwise). */
const VolumeBackend *volume_backend_get(Backend b);

/* Every backend's ops, for the drivers that visit all of them (metrics).
 * Backends that differ only in their traits (the loop backends: their
 * filesystem) share one table. */
extern const VolumeBackend *const volume_backends[_BACKEND_MAX];

/* The maintenance of pool p's volumes, and of o now (o may be NULL), as its
 * backend's maintenance op says; none for a backend without one. Free *ret
 * with volume_maintenance_done(). Returns: -EINVAL (no such backend),
 * -ENOMEM, 0. */
int volume_maintenance(const Pool *p, const VolumeObservation *o, VolumeMaintenance *ret);
