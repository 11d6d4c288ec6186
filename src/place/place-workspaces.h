/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The engine side of a workspace's life on the state pool: create (decide,
 * carve if needed, make the directory, record), remove (keep data or
 * destroy), list, get, and reconcile the record with the directories that
 * really exist. Works on a StateRecord the caller owns and saves it
 * atomically after every change (see docs/placement.md, "Crash safety").
 *
 * Not thread-safe: the agent serialises calls (one event loop).
 */

#include <stdbool.h>
#include <stdint.h>
#include <json-c/json.h>

#include "layout.h"
#include "place-policy.h"
#include "state.h"

/* A failure, for the API and the log: the reason code and a human message
 * that names what to do. The caller zero-initialises it and calls
 * place_error_done(); it is filled only when a call fails. */
typedef struct PlaceError {
    PlaceReason reason; /* PLACE_REASON_NONE when no policy reason applies */
    char *message;
} PlaceError;

void place_error_done(PlaceError *e);

/* The errno a refusal reason maps to (-ENOSPC for a full pool, -EBUSY for
 * a sticky volume that cannot take the workspace back, ...). */
int place_reason_to_errno(PlaceReason r);

/*
 * Carves volume `index` of pool `role` (through the volumes engine's
 * apply), records it in the same StateRecord the PlaceContext works on,
 * and mounts it at layout_mount_path(). Sets *ret_volume_name.
 * Returns: <0 on error, 0 on success.
 */
typedef int (*PlaceCarveFunc)(void *userdata, PoolRole role, unsigned index,
                              char **ret_volume_name);

/* What placement needs to know about a volume right now. */
typedef struct PlaceVolumeObservation {
    uint64_t free_bytes;
    uint64_t free_inodes;
    uint64_t size_bytes;  /* with what growth can add; 0: unknown */
    unsigned flags; /* PlaceVolumeFlags */
    bool flush_known;     /* the flush probe measured it recently: */
    uint64_t flush_usec;  /* its recent flush cost (PlaceCandidate) */
} PlaceVolumeObservation;

typedef int (*PlaceObserveFunc)(void *userdata, const VolumeRecord *v, const char *mount_path,
                                PlaceVolumeObservation *ret);

/*
 * The default observation: statvfs(2) of the mount path (free bytes for an
 * unprivileged writer, free inodes, ST_RDONLY), and for every backend but
 * `dir` a check that the path really is a mount point: a volume that is
 * not mounted is UNAVAILABLE, because its workspaces/ directory would
 * otherwise land on the host filesystem below it. A missing path is
 * UNAVAILABLE too. NO_QUOTA unless quotactl says project quotas are
 * enforced there. Returns: <0 on unexpected errors, 0.
 */
int place_volume_observe_default(const VolumeRecord *v, const char *mount_path,
                                 PlaceVolumeObservation *ret);

typedef struct PlaceContext {
    const Layout *layout;
    StateRecord *record;
    const char *record_path;       /* where to save; NULL: do not save */
    /* Set: saves go here instead (the agent's saver thread: queued, made
     * durable before the agent answers). Returns 0 or -errno. */
    int (*save)(void *userdata, StateRecord *record);
    void *save_userdata;
    PlaceCarveFunc carve;          /* NULL: carving is refused */
    void *carve_userdata;
    PlaceObserveFunc observe;      /* NULL: place_volume_observe_default */
    void *observe_userdata;
    /* Volumes the policy must count that the record does not describe
     * fully: being carved (flag CARVING; n_workspaces = the creates that
     * wait for it; it replaces the record's entry of the same name), or
     * refused by the engine and never recorded (UNAVAILABLE: its index is
     * taken, never carved again). Strings borrowed. */
    const PlaceCandidate *extra;
    size_t n_extra;
    /* Bytes the host can give new volumes (capacity_host_carvable), when
     * host_checked: a carve that does not fit is refused (host-full)
     * rather than failing half-way. */
    bool host_checked;
    uint64_t host_carvable;
} PlaceContext;

/* A workspace directory's project quota: its project id (0: none) and
 * limit (0: none; clear_limit: remove one set before, which a reclaim may
 * find, and a fresh create too: project ids are reused once the highest
 * one's workspace is destroyed, and XFS keeps a project's limit). */
typedef struct PlaceQuota {
    uint32_t project_id;
    uint64_t limit_bytes;
    bool clear_limit;
} PlaceQuota;

/*
 * Whether the layout's state pool can enforce per-workspace quotas on
 * this kernel (XFS project quotas; see quota.h).
 * Returns: 1, 0 with *ret_reason (static text) saying why not, -EINVAL.
 */
int place_quota_support(const Layout *l, const char **ret_reason);

typedef struct PlaceCreateRequest {
    const char *id;
    const char *tenant;            /* NULL: none */
    uint64_t quota;                /* bytes (project quota), 0: none */
    char **labels;                 /* "key=value" strv, may be NULL */
    bool reclaim;                  /* take back kept data of the same id */
} PlaceCreateRequest;

/*
 * Creates a workspace: validates the request, decides its volume with the
 * pool's policy (carving a new volume through c->carve when every volume
 * is at its bound), creates <volume mount>/workspaces/<id> owned by the
 * layout's workspace user/group with its dir_mode, and records it.
 * *ret (may be NULL) points into c->record.
 * Returns: -EINVAL (bad id or tenant), -EOPNOTSUPP (a quota this host
 * cannot enforce),
 * -EEXIST (id in use, kept data without reclaim, directory clash), -EACCES
 * (reclaiming another tenant's data), -ENOSPC (pool full), -EBUSY/-EROFS
 * (sticky volume cannot take it), -errno; 0 on success. On failure
 * *error says why and nothing changed (a carved volume stays: it is
 * empty and counts towards max_volumes).
 */
int place_workspace_create(PlaceContext *c, const PlaceCreateRequest *req,
                           WorkspaceRecord **ret, PlaceError *error);

/*
 * The first half of place_workspace_create(): validates the request and
 * decides (USE a volume, CARVE one, or REFUSE), creating nothing. A
 * refusal is an error here (-ENOSPC, -EBUSY..., *error says why); for USE
 * *ret_volume is the volume's name (owned), for CARVE *ret_carve_index.
 * *ret_carving: the chosen volume is being carved (a CARVING extra).
 * *ret_explanation (may be NULL; owned): the policy's one line on why.
 * Returns: <0 on error or refusal, 0 with the decision.
 */
int place_workspace_decide(PlaceContext *c, const PlaceCreateRequest *req, PlaceAction *ret_action,
                           char **ret_volume, unsigned *ret_carve_index, bool *ret_carving, char **ret_explanation,
                           PlaceError *error);

/*
 * The second half: creates the workspace on `volume` (which exists, is
 * mounted and was chosen by place_workspace_decide), in the three crash-
 * safe steps below, one after the other (layoutctl, tests). The agent
 * runs the same steps apart: it waits for the intent to be durable, and
 * makes the directory in a worker. The bound is checked again.
 * Returns: as place_workspace_create.
 */
int place_workspace_create_on(PlaceContext *c, const PlaceCreateRequest *req, const char *volume,
                              WorkspaceRecord **ret, PlaceError *error);

/*
 * Step 1, the intent: checks the request and the volume (the bound counts
 * the workspaces being created too) and records the workspace as being
 * created (creating=true; a reclaim marks its kept entry so), saved
 * through c->save. Touches no filesystem. *ret points into c->record.
 * Returns: as place_workspace_create; nothing changed on failure.
 */
int place_workspace_intent(PlaceContext *c, const PlaceCreateRequest *req, const char *volume,
                           WorkspaceRecord **ret, PlaceError *error);
/*
 * Step 2, the directory (the filesystem part; the agent runs it in a
 * worker): <volume mount>/workspaces/<id>, owned by the layout's
 * workspace user and group, with its dir_mode, labelled with the
 * quota's project (inherited below it) and its limit set (quota may be
 * NULL: no project). Without reclaim, an existing directory or a mount
 * point in use is refused (-EEXIST). *ret_created: it did not exist
 * before. A limit that cannot be set fails the step and removes a
 * directory it made.
 * Returns: -EEXIST, -ESRCH (user/group), -errno, 0.
 */
int place_workspace_make_dir(const Layout *l, const char *volume, const char *id, bool reclaim,
                             const PlaceQuota *quota, bool *ret_created, PlaceError *error);
/* Step 3: the workspace being created is active (saved through c->save).
 * Returns: -ENOENT (not being created), -errno of the save, 0. */
int place_workspace_activate(PlaceContext *c, const char *id, PlaceError *error);
/* Finishes a create a crash interrupted (its intent on disk): steps 2 and
 * 3, the directory made or found. Returns: -ENOENT (none), as above. */
int place_workspace_resume(PlaceContext *c, const char *id, PlaceError *error);
/* A create that failed after its intent: the entry goes (was_new), or a
 * reclaimed one is kept data again; saved. */
void place_workspace_abandon(PlaceContext *c, const char *id, bool was_new);

/*
 * The decision place_workspace_create() would take now, without doing
 * anything, and the candidates it was taken on (for `layoutctl why`).
 * *ret_candidates' strings borrow from c->record; free the array with
 * free() and the decision with place_decision_done().
 * Returns: <0 on error, 0 on success (also when the decision is REFUSE).
 */
int place_workspace_explain(PlaceContext *c, const PlaceCreateRequest *req,
                            PlaceDecision *ret, PlaceCandidate **ret_candidates,
                            size_t *ret_n_candidates, PlacePoolConfig *ret_config);

/*
 * place_workspace_explain() for a create of id (tenant may be NULL), as
 * the API's JSON: {"id", "action", "reason", "volume" (use) or
 * "carve_index" (carve), "explanation", "why" (the ranking, worded, as
 * `layoutctl why` prints it)}. Nothing is carved or saved (c->carve and
 * c->save are not called). Returns: -errno, 0 with *ret.
 */
int place_workspace_why(PlaceContext *c, const char *id, const char *tenant, json_object **ret);

typedef enum PlaceRemoveFlags {
    PLACE_REMOVE_DESTROY = 1U << 0, /* delete the data and the record */
} PlaceRemoveFlags;

/*
 * Removes a workspace. Without PLACE_REMOVE_DESTROY the data and the record
 * stay (active = false): the workspace no longer counts towards its
 * volume's bound, and re-creating the id with reclaim brings it back to
 * the same volume. With it, the directory tree is deleted without following
 * symlinks or crossing into other mounts, then the record is dropped. The
 * caller stops the workspace's daemon first.
 * Returns: -ENOENT (no such workspace), -EBUSY (its volume is not
 * mounted), -EXDEV (a mount inside the workspace), -errno, 0.
 */
int place_workspace_remove(PlaceContext *c, const char *id, unsigned flags, PlaceError *error);

/*
 * For a destroy that runs elsewhere (the agent's worker): the directory
 * that holds the workspace's data (<volume mount>/workspaces), after
 * checking its volume is mounted. *ret_dir is owned; NULL when the record
 * lost the volume (nothing to delete).
 * Returns: -ENOENT (no such workspace), -EBUSY (volume not mounted), 0.
 */
int place_workspace_data_dir(PlaceContext *c, const char *id, char **ret_dir, PlaceError *error);

/* Drops the record of a workspace whose data is destroyed. Returns
 * -ENOENT, -errno (saving), 0. */
int place_workspace_forget(PlaceContext *c, const char *id, PlaceError *error);

/* The record of a workspace (active or kept), or NULL. */
WorkspaceRecord *place_workspace_get(const StateRecord *s, const char *id);

/*
 * Workspaces sorted by id; only active ones unless include_inactive, only
 * those on `volume` if not NULL. *ret is an array of borrowed pointers
 * (free() it). Returns: -ENOMEM, 0.
 */
int place_workspace_list(const StateRecord *s, const char *volume, bool include_inactive,
                         WorkspaceRecord ***ret, size_t *ret_n);

typedef enum PlaceReconcileKind {
    PLACE_RECONCILE_ADOPTED,     /* directory without record: recorded as kept data */
    PLACE_RECONCILE_MISSING,     /* record without directory (drift) */
    PLACE_RECONCILE_CONFLICT,    /* directory on another volume than its record */
    PLACE_RECONCILE_IGNORED,     /* entry in workspaces/ or derived/ that is not a workspace id, or an unreadable derived/ */
    PLACE_RECONCILE_UNAVAILABLE, /* volume not scanned: not mounted */
    PLACE_RECONCILE_STRAY_CACHE, /* derived/<id> of no workspace on that volume: left, said */
    _PLACE_RECONCILE_KIND_MAX,
    _PLACE_RECONCILE_KIND_INVALID = -EINVAL,
} PlaceReconcileKind;

const char *place_reconcile_kind_to_string(PlaceReconcileKind k);
PlaceReconcileKind place_reconcile_kind_from_string(const char *s);

typedef struct PlaceReconcileItem {
    PlaceReconcileKind kind;
    char *volume;
    char *name;      /* workspace id or directory entry; NULL for UNAVAILABLE */
    char *path;
} PlaceReconcileItem;

typedef struct PlaceReconcileReport {
    PlaceReconcileItem *items;
    size_t n_items;
    size_t n_adopted;
    bool changed;    /* the record was changed (and saved) */
} PlaceReconcileReport;

void place_reconcile_report_done(PlaceReconcileReport *r);

/*
 * Compares every mounted state volume's workspaces/ directory with the
 * record. Directories without a record (a create interrupted before it
 * was recorded, a restored record) are adopted as kept data (active =
 * false), so they are never lost track of and never counted towards a
 * bound twice; nothing is deleted. Idempotent. Saves when it changed the
 * record.
 * Returns: <0 on error (*ret untouched), 0 with *ret filled.
 */
int place_reconcile(PlaceContext *c, PlaceReconcileReport *ret);

/*
 * Deletes the tree `name` below dirfd: never follows symlinks (they are
 * unlinked as entries), never crosses into another mount (-EXDEV, leaving
 * the rest), bounded depth (-ELOOP beyond PLACE_RMTREE_DEPTH_MAX).
 * A missing entry is success. Returns: -errno, 0.
 */
#define PLACE_RMTREE_DEPTH_MAX 1024
int place_rmtree_at(int dirfd, const char *name);

/* Opens <mount>/workspaces (see place_rmtree_at: the worker that destroys
 * a workspace's data). Returns: -errno, 0 with *ret_fd. */
int place_open_workspaces_dir(const char *mount, bool create, int *ret_fd);

/* Tests only: called at named points of place_workspace_create() (e.g.
 * "after-mkdir", between creating the directory and recording it active)
 * so a test can kill the process there. NULL in production. */
extern void (*place_test_hook)(const char *point);
