/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The engine: one object opened on a root (stratisd's Engine). It holds
 * the root's lock, the layout, the record and the latest observation, and
 * exposes the volume verbs: observe, plan, apply, carve, grow, teardown,
 * repair. layoutctl runs them in its own process; the agent runs them in
 * worker child processes (worker.h) so that its event loop never touches
 * a device. Nothing above the engine repeats lock, load or merge logic.
 *
 * Library code: 0 / -errno, never logs; *ret_error (may be NULL) gets a
 * sentence for the operator where the caller needs one.
 */

#include <stdbool.h>

#include "layout.h"
#include "observation.h"
#include "plan.h"
#include "record-store.h"
#include "result.h"
#include "state.h"
#include "volumes.h"

#define ENGINE_DEFAULT_LAYOUT_DIR "/etc/layoutd/layouts.d"

typedef struct EngineOptions {
    const char *layout_path;     /* a file, or a directory holding exactly
                                    one *.yaml; NULL: ENGINE_DEFAULT_LAYOUT_DIR */
    const char *root;            /* overrides the layout's root; NULL: keep */
    bool lock;                   /* take the root's lock (exclusive, not
                                    waiting): the agent and layoutctl's
                                    changing verbs; false for readers */
    bool create_root;            /* mkdir -p the root (changing verbs) */
} EngineOptions;

typedef struct Engine {
    Layout *layout;
    char *layout_path;           /* the file the layout came from */
    char *layout_hash;
    char *record_path;           /* <root>/layoutd-state.json */
    int lock_fd;                 /* <root>/layoutd-state.lock, or -EBADF */
    StateRecord *record;
    Observation *observation;    /* the latest, or NULL */
    RecordFileStore file_store;
    RecordStore *store;          /* &file_store.store unless replaced */
    /* Optional: told when a step of apply/teardown/repair begins and ends. */
    void (*progress)(void *userdata, const char *volume, const ApplyStepResult *step, bool done);
    void *progress_userdata;
} Engine;

/*
 * Loads a layout: path is a file or a directory holding one *.yaml; the
 * root override is applied. On failure *ret_error holds every diagnostic,
 * one "file:line:col: message" per line.
 * Returns: -EINVAL (invalid), -ENOENT, -ENOTUNIQ, -errno, 0 with *ret and
 * *ret_path (the file read).
 */
int engine_load_layout(const char *path, const char *root, Layout **ret, char **ret_path, char **ret_error);

/*
 * Opens the engine: loads the layout, makes the root (create_root), takes
 * the lock (lock), loads the record. A record that does not parse, or is
 * of a newer version, is never overwritten: the open fails.
 * Returns: -EINVAL (layout), -EWOULDBLOCK (locked by another agent or
 * layoutctl), -EBADMSG (corrupt record), -EPROTONOSUPPORT (newer record),
 * -errno; 0 with *ret. *ret_error says which and why.
 */
int engine_open(const EngineOptions *o, Engine **ret, char **ret_error);

/*
 * An engine over a layout and a record the caller already has (a worker:
 * the agent holds the lock and owns the record file; saves go to store).
 * Takes ownership of layout and record, also on failure.
 * Returns: -ENOMEM, 0 with *ret.
 */
int engine_new_detached(Layout *layout, StateRecord *record, RecordStore *store, Engine **ret);

Engine *engine_free(Engine *e);
DEFINE_TRIVIAL_CLEANUP_FUNC(Engine *, engine_free)

/* Replaces e->observation with a fresh one (device reads). */
int engine_observe(Engine *e);

/* Whether the cached entry of volume `name` is kept over a fresh one. */
typedef bool (*EngineKeepCached)(const char *name, void *userdata);

/*
 * Merges a fresh observation (taken, also on failure; may be NULL) into
 * e->observation. complete: fresh looked at every volume (an observe, an
 * apply of the whole layout), so a cached entry it lacks goes; otherwise
 * (a job on one volume) cached entries it lacks stay. keep (may be NULL):
 * the volumes whose cached entry wins over fresh's (one a job works on
 * right now is better known from that job). The host's figures and
 * taken_at are fresh's.
 * Returns 0 or -ENOMEM (the merge goes on past the entry it lost).
 */
int engine_merge_observation(Engine *e, Observation *fresh, bool complete, EngineKeepCached keep, void *userdata);

/* The plan from the latest observation (observes first when there is
 * none). Pure on top of that. */
int engine_plan(Engine *e, Plan **ret);

/* Observes, plans and carries out the whole layout; observes again after.
 * only (may be NULL): the steps of that volume alone. */
int engine_apply(Engine *e, const char *only, ApplyResult **ret);

/*
 * Carves volume `index` of the state pool when placement asks for one more
 * flush domain: the layout with one more volume, cut down to that volume's
 * steps, so nothing else is touched. *ret_name: "state-<index>".
 * Returns: -EOPNOTSUPP (not the state pool), -ENOSPC (index at or beyond
 * max_volumes), -errno; 0 with *ret (the volume may still have FAILED or
 * been REFUSED: see apply_result_ok).
 */
int engine_carve(Engine *e, PoolRole role, unsigned index, ApplyResult **ret, char **ret_name);

/* Grows `volume` online to new_size bytes (never shrinks; refused with
 * the reason in *ret when it cannot). Returns: -ENOENT, -errno, 0. */
int engine_grow(Engine *e, const char *volume, uint64_t new_size, ApplyResult **ret);

/* What engine_teardown() would do (observes first): the steps and the
 * refusals, any of which refuses the whole run. Returns: -errno, 0. */
int engine_plan_teardown(Engine *e, const TeardownOptions *opts, Plan **ret);

/* Tears down every volume the record lists, all or nothing
 * (volumes_teardown); the record file goes once it lists nothing.
 * Returns: -errno, 0 with *ret. */
int engine_teardown(Engine *e, const TeardownOptions *opts, ApplyResult **ret);

/* Destroys an empty state volume (the agent reclaims one carved for a
 * create that never came, beyond the pool's min_volumes): refused unless
 * no workspace of the record is on it, kept data included, and its
 * workspaces/ directory is empty. *ret_error (may be NULL) says why not.
 * Returns: -ENOENT, -ENOTEMPTY, -errno, 0 with *ret (the teardown's). */
int engine_reclaim(Engine *e, const char *volume, ApplyResult **ret, char **ret_error);

/* Resolves the safe drift cases. Returns: -errno, 0 with *ret. */
int engine_repair(Engine *e, const RepairOptions *opts, ApplyResult **ret);

/* The layout with state volume `index` declared (min_volumes raised): a
 * shallow copy that borrows every pointer of l. */
void engine_layout_with_volume(const Layout *l, PoolRole role, unsigned index, Layout *ret);
