/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The per-workspace supervision state machine, as one pure function of
 * (state, event, facts) -> (new state, actions), in the style of
 * s6-supervise and systemd's service.c. supervisor.c owns the processes,
 * timers and mounts; it feeds events in and carries the actions out. All
 * transitions live in fsm_transition() and nowhere else (docs/supervision.md
 * has the table).
 */

#include <stdbool.h>

#include "layout.h"

typedef enum SupervisorState {
    SUPERVISOR_STOPPED,   /* no process; initial and final state */
    SUPERVISOR_STARTING,  /* spawned, waiting for the FUSE mount */
    SUPERVISOR_RUNNING,   /* mount is up */
    SUPERVISOR_STOPPING,  /* SIGTERM (or SIGKILL) sent, waiting for exit */
    SUPERVISOR_BACKOFF,   /* died, waiting for the restart delay */
    SUPERVISOR_FAILED,    /* gave up (crash loop, policy); needs restart */
    SUPERVISOR_BLOCKED,   /* would start, but its volumes are not in service
                             (FsmInput.blocked): no process until UNBLOCKED */
    _SUPERVISOR_STATE_MAX,
    _SUPERVISOR_STATE_INVALID = -EINVAL,
} SupervisorState;

typedef enum SupervisorEvent {
    SUPERVISOR_EVENT_START,             /* workspace added (not adopted) */
    SUPERVISOR_EVENT_ADOPTED,           /* a running daemon was re-adopted */
    SUPERVISOR_EVENT_SPAWN_FAILED,      /* fork/exec failed */
    SUPERVISOR_EVENT_READY,             /* the FUSE mount appeared */
    SUPERVISOR_EVENT_READY_TIMEOUT,
    SUPERVISOR_EVENT_EXITED,            /* pidfd readable, process reaped */
    SUPERVISOR_EVENT_STOP_REQUESTED,
    SUPERVISOR_EVENT_STOP_TIMEOUT,
    SUPERVISOR_EVENT_BACKOFF_ELAPSED,
    SUPERVISOR_EVENT_RESTART_REQUESTED,
    SUPERVISOR_EVENT_HANG_DETECTED,
    SUPERVISOR_EVENT_UNBLOCKED,         /* the volumes may be in service again */
    _SUPERVISOR_EVENT_MAX,
    _SUPERVISOR_EVENT_INVALID = -EINVAL,
} SupervisorEvent;

/* Why a STOPPING workspace is stopping: decides what its exit leads to. */
typedef enum SupervisorIntent {
    SUPERVISOR_INTENT_NONE,
    SUPERVISOR_INTENT_STOP,     /* -> STOPPED */
    SUPERVISOR_INTENT_RESTART,  /* -> STARTING at once (explicit restart) */
    SUPERVISOR_INTENT_FAILURE,  /* we killed it (ready timeout, hang):
                                   a failure, restart policy decides */
    _SUPERVISOR_INTENT_MAX,
    _SUPERVISOR_INTENT_INVALID = -EINVAL,
} SupervisorIntent;

/* Actions, a bit mask; supervisor.c carries them out in this order. */
typedef enum SupervisorAction {
    SUPERVISOR_ACTION_CANCEL_TIMER   = 1u << 0,  /* disarm the state's timer */
    SUPERVISOR_ACTION_RECORD_DEATH   = 1u << 1,  /* tally + backoff attempt */
    SUPERVISOR_ACTION_CLEANUP_MOUNT  = 1u << 2,  /* abort + detach a left mount */
    SUPERVISOR_ACTION_RESET_TALLY    = 1u << 3,  /* explicit restart: forget deaths */
    SUPERVISOR_ACTION_NOTIFY_HANG    = 1u << 4,  /* on_hang callback */
    SUPERVISOR_ACTION_ABORT_CONN     = 1u << 5,  /* fusectl abort (hung daemon) */
    SUPERVISOR_ACTION_TERM           = 1u << 6,  /* SIGTERM + stop timer */
    SUPERVISOR_ACTION_KILL           = 1u << 7,  /* SIGKILL to the process group */
    SUPERVISOR_ACTION_ARM_BACKOFF    = 1u << 8,  /* timer: the backoff delay */
    SUPERVISOR_ACTION_SPAWN          = 1u << 9,  /* fork+exec, ready timer */
} SupervisorAction;

/* Facts the transition depends on, computed by the caller (pure values). */
typedef struct FsmInput {
    SupervisorState state;
    SupervisorIntent intent;
    RestartPolicy policy;
    bool exit_failed;      /* EXITED: non-zero status, signal or unknown */
    bool crashloop;        /* one more death trips the crash-loop tally */
    bool restart_on_hang;
    bool blocked;          /* its volumes are not in service: a transition
                              that would spawn goes to BLOCKED instead */
} FsmInput;

typedef struct FsmOutput {
    SupervisorState state;
    SupervisorIntent intent;
    unsigned actions;      /* SupervisorAction bits */
} FsmOutput;

/*
 * The transition function. *ret gets the new state, intent and actions.
 * Returns: -ESTALE when the event means nothing in this state (it is
 * ignored: *ret = unchanged state, no actions), 0 otherwise.
 */
int fsm_transition(const FsmInput *in, SupervisorEvent ev, FsmOutput *ret);

const char *supervisor_state_to_string(SupervisorState s);
SupervisorState supervisor_state_from_string(const char *s);
const char *supervisor_event_to_string(SupervisorEvent e);
SupervisorEvent supervisor_event_from_string(const char *s);
const char *supervisor_intent_to_string(SupervisorIntent i);
SupervisorIntent supervisor_intent_from_string(const char *s);
