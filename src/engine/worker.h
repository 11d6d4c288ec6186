/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Workers: the engine's verbs in a child process, so that the agent's event
 * loop only decides and answers (systemd's homed/homework split). The agent
 * starts `layoutd --worker` (this same binary) and hands it one request:
 * the operation, the layout (as YAML, which parses back to the same
 * layout), the record and the operation's arguments. The worker runs the
 * engine on a detached copy and answers with the result and a fresh
 * observation.
 *
 * The agent stays the only writer of the record file. Every time a step
 * must have the record on disk before it goes on (the intent before a
 * backing file, the UUID before mkfs, "formatted" after it), the worker
 * sends that volume's entry and waits; the agent merges it into its own
 * record, saves, and answers. A worker that dies mid-way (or is killed with
 * the agent) therefore leaves exactly what a crash of layoutctl would.
 *
 * The protocol, one JSON object per line on the worker's stdin/stdout:
 *   agent  -> worker  {"op": ..., "layout": YAML, "layout_source": FILE,
 *                      "record": {...}, "args": {...}}
 *   worker -> agent   {"type": "save", "name": VOLUME, "volume": {...}|null}
 *   agent  -> worker  {"type": "saved", "error": 0|-errno}
 *   worker -> agent   {"type": "progress", "volume": V, "step": KIND,
 *                      "description": ..., "done": bool, "changed": bool,
 *                      "error": 0|-errno, "message": ...}
 *   worker -> agent   {"type": "sample", ...}: a long-running op's data
 *   worker -> agent   {"type": "result", "error": 0|-errno, "message": ...,
 *                      "result": {apply result}|null,
 *                      "observation": {...}|null, "extra": {...}|null}
 */

#include <json-c/json.h>
#include <systemd/sd-event.h>

#include "layout.h"
#include "observation.h"
#include "result.h"
#include "state.h"

/* The operations a worker knows (worker_main's table). */
#define WORKER_OP_OBSERVE "observe"     /* args: {} */
#define WORKER_OP_APPLY "apply"         /* args: {"only": VOLUME|absent} */
#define WORKER_OP_CARVE "carve"         /* args: {"role": ROLE, "index": N} */
#define WORKER_OP_GROW "grow"           /* args: {"volume": V, "size": BYTES} */
#define WORKER_OP_PROBE "probe"         /* args: {"paths": [DIR...]}: the flush probe */
#define WORKER_OP_RMTREE "rmtree"       /* args: {"dir": D, "name": N}: rm -r D/N, one fs */
#define WORKER_OP_WORKSPACE_DIR "workspace-dir" /* args: {"volume": V, "id": ID, "reclaim": B, "project_id": P, "quota": BYTES}: a
                                                   workspace's state directory (extra: {"created"}) */
#define WORKER_OP_RECLAIM "reclaim"     /* args: {"volume": V}: destroy an empty state volume */
#define WORKER_OP_RECONCILE "reconcile" /* args: {}: the state volumes' workspace directories against
                                           the record (extra: {"items": [...], "adopted": [...]}) */
#define WORKER_OP_QUOTA "quota"         /* args: {"mount": M, "project": P, "limit": BYTES}: set a
                                           workspace's project quota limit */
#define WORKER_OP_WATCH "watch"         /* args: {"paths": [DIR...], "interval_ms": N}: statvfs
                                           of each every N ms, sent as samples when a figure
                                           moved, until the agent closes stdin (the capacity
                                           watch: far cheaper than an observe) */

typedef struct Worker Worker;

/* on_save's "answered later" (a positive value, never an error). */
#define WORKER_SAVE_PENDING 1

typedef struct WorkerCallbacks {
    /* The worker changed the record entry of volume `name`: v is the new
     * entry (the callee takes it), NULL when removed. The worker waits for
     * the answer: return <0 when the change could not be made durable. */
    int (*on_save)(Worker *w, const char *name, VolumeRecord *v, void *userdata);
    /* on_save may instead return WORKER_SAVE_PENDING and answer later,
     * with worker_answer_save(), once the change is durable. */
    /* A step began (done = false) or ended. May be NULL. */
    void (*on_progress)(Worker *w, const char *volume, const ApplyStepResult *step, bool done, void *userdata);
    /* A sample of a long-running op (WORKER_OP_WATCH); borrowed. May be NULL. */
    void (*on_sample)(Worker *w, json_object *sample, void *userdata);
    /* The worker finished. error <0 when it failed as a whole (it crashed,
     * was killed, or the operation could not run: message says why); the
     * callee takes result, observation and extra (each may be NULL). */
    void (*on_done)(Worker *w, int error, const char *message, ApplyResult *result, Observation *observation,
                    json_object *extra, void *userdata);
} WorkerCallbacks;

typedef struct WorkerRequest {
    const char *op;              /* WORKER_OP_* */
    const Layout *layout;
    const StateRecord *record;
    json_object *args;           /* borrowed; NULL: {} */
} WorkerRequest;

/*
 * Starts a worker: exe (the agent's own binary, e.g. "/proc/self/exe")
 * with "--worker". on_done runs exactly once (also when it crashes).
 * Returns: -errno (could not start: nothing runs), 0 with *ret.
 */
int worker_start(sd_event *e, const char *exe, const WorkerRequest *req, const WorkerCallbacks *cb, void *userdata,
                 Worker **ret);

pid_t worker_pid(const Worker *w);

/* The answer to a save that on_save left pending (WORKER_SAVE_PENDING):
 * error 0 when the change is durable, <0 when not (the worker fails its
 * step). A no-op when no save is pending (the worker died meanwhile, or
 * w is NULL). */
void worker_answer_save(Worker *w, int error);
const char *worker_op(const Worker *w);
/* Frees the worker; one still running is killed and reaped (its on_done
 * does not run). Accepts NULL; returns NULL. */
Worker *worker_free(Worker *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(Worker *, worker_free)

/* The child's side: `layoutd --worker` reads the request on stdin, runs it
 * and answers on stdout. Returns the process exit code. */
int worker_main(void);
