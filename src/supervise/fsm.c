/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "fsm.h"
#include "string-table.h"

static const char *const supervisor_state_table[_SUPERVISOR_STATE_MAX] = {
    [SUPERVISOR_STOPPED] = "stopped",   [SUPERVISOR_STARTING] = "starting",
    [SUPERVISOR_RUNNING] = "running",   [SUPERVISOR_STOPPING] = "stopping",
    [SUPERVISOR_BACKOFF] = "backoff",   [SUPERVISOR_FAILED] = "failed",
    [SUPERVISOR_BLOCKED] = "blocked",
};

static const char *const supervisor_event_table[_SUPERVISOR_EVENT_MAX] = {
    [SUPERVISOR_EVENT_START] = "start",
    [SUPERVISOR_EVENT_ADOPTED] = "adopted",
    [SUPERVISOR_EVENT_SPAWN_FAILED] = "spawn-failed",
    [SUPERVISOR_EVENT_READY] = "ready",
    [SUPERVISOR_EVENT_READY_TIMEOUT] = "ready-timeout",
    [SUPERVISOR_EVENT_EXITED] = "exited",
    [SUPERVISOR_EVENT_STOP_REQUESTED] = "stop-requested",
    [SUPERVISOR_EVENT_STOP_TIMEOUT] = "stop-timeout",
    [SUPERVISOR_EVENT_BACKOFF_ELAPSED] = "backoff-elapsed",
    [SUPERVISOR_EVENT_RESTART_REQUESTED] = "restart-requested",
    [SUPERVISOR_EVENT_HANG_DETECTED] = "hang-detected",
    [SUPERVISOR_EVENT_UNBLOCKED] = "unblocked",
};

static const char *const supervisor_intent_table[_SUPERVISOR_INTENT_MAX] = {
    [SUPERVISOR_INTENT_NONE] = "none",
    [SUPERVISOR_INTENT_STOP] = "stop",
    [SUPERVISOR_INTENT_RESTART] = "restart",
    [SUPERVISOR_INTENT_FAILURE] = "failure",
};

DEFINE_STRING_TABLE_LOOKUP(supervisor_state, SupervisorState);
DEFINE_STRING_TABLE_LOOKUP(supervisor_event, SupervisorEvent);
DEFINE_STRING_TABLE_LOOKUP(supervisor_intent, SupervisorIntent);

/* An unexpected death (or one we caused because the daemon misbehaved):
 * the restart policy and the crash-loop tally decide. */
static void decide_after_death(const FsmInput *in, bool failed, FsmOutput *o) {
    o->intent = SUPERVISOR_INTENT_NONE;
    o->actions |= SUPERVISOR_ACTION_CANCEL_TIMER | SUPERVISOR_ACTION_CLEANUP_MOUNT |
                  SUPERVISOR_ACTION_RECORD_DEATH;
    bool restart = in->policy == RESTART_ALWAYS || (in->policy == RESTART_ON_FAILURE && failed);
    if (!restart)
        o->state = failed ? SUPERVISOR_FAILED : SUPERVISOR_STOPPED;
    else if (in->crashloop)
        o->state = SUPERVISOR_FAILED;
    else {
        o->state = SUPERVISOR_BACKOFF;
        o->actions |= SUPERVISOR_ACTION_ARM_BACKOFF;
    }
}

/* ---- the rules that depend on more than (state, event) ---------------- */

/* The daemon could not be started at all. */
static bool on_spawn_failed(const FsmInput *in, FsmOutput *o) {
    decide_after_death(in, true, o);
    return true;
}

/* Dying before the mount was up is a failure whatever the status: the
 * daemon never served. */
static bool on_exited_starting(const FsmInput *in, FsmOutput *o) {
    decide_after_death(in, true, o);
    return true;
}

static bool on_exited_running(const FsmInput *in, FsmOutput *o) {
    decide_after_death(in, in->exit_failed, o);
    return true;
}

static bool on_hang(const FsmInput *in, FsmOutput *o) {
    o->actions = SUPERVISOR_ACTION_NOTIFY_HANG;
    if (in->restart_on_hang) {
        /* A hung daemon may not act on SIGTERM, and its unmount would wait
         * on the stuck requests: abort the connection (stuck callers get
         * ENOTCONN) and kill it. */
        o->state = SUPERVISOR_STOPPING;
        o->intent = SUPERVISOR_INTENT_FAILURE;
        o->actions |= SUPERVISOR_ACTION_CANCEL_TIMER | SUPERVISOR_ACTION_ABORT_CONN | SUPERVISOR_ACTION_KILL;
    }
    return true;
}

/* What a daemon we stopped leads to depends on why we stopped it. */
static bool on_exited_stopping(const FsmInput *in, FsmOutput *o) {
    switch (in->intent) {
    case SUPERVISOR_INTENT_RESTART:
        o->state = SUPERVISOR_STARTING;
        o->intent = SUPERVISOR_INTENT_NONE;
        o->actions = SUPERVISOR_ACTION_CANCEL_TIMER | SUPERVISOR_ACTION_CLEANUP_MOUNT |
                     SUPERVISOR_ACTION_RESET_TALLY | SUPERVISOR_ACTION_SPAWN;
        break;
    case SUPERVISOR_INTENT_FAILURE:
        decide_after_death(in, true, o);
        break;
    default:
        o->state = SUPERVISOR_STOPPED;
        o->intent = SUPERVISOR_INTENT_NONE;
        o->actions = SUPERVISOR_ACTION_CANCEL_TIMER | SUPERVISOR_ACTION_CLEANUP_MOUNT;
    }
    return true;
}

/* A stop wins over a pending restart, and is idempotent. */
static bool on_stop_while_stopping(const FsmInput *in, FsmOutput *o) {
    if (in->intent == SUPERVISOR_INTENT_STOP)
        return false;
    o->intent = SUPERVISOR_INTENT_STOP;
    return true;
}

/* A restart asked for while we kill a misbehaving daemon replaces the
 * policy's decision; during a stop or a restart it means nothing. */
static bool on_restart_while_stopping(const FsmInput *in, FsmOutput *o) {
    if (in->intent != SUPERVISOR_INTENT_FAILURE)
        return false;
    o->intent = SUPERVISOR_INTENT_RESTART;
    return true;
}

/*
 * The table, s6-supervise's way: one cell per (state, event). An empty
 * cell is an event that means nothing in that state (ignored). A cell is
 * either a plain rule (the next state, the intent or KEEP, the actions) or
 * a function for the rules that look at more facts.
 */
typedef struct FsmRule {
    bool valid;
    SupervisorState next;
    int intent;                  /* SupervisorIntent, or KEEP */
    unsigned actions;
    bool (*fn)(const FsmInput *in, FsmOutput *o); /* false: ignored after all */
} FsmRule;

#define KEEP (-1)
#define GO(state, acts) { .valid = true, .next = (state), .intent = KEEP, .actions = (acts) }
#define GOI(state, why, acts) { .valid = true, .next = (state), .intent = (why), .actions = (acts) }
#define FN(f) { .valid = true, .fn = (f) }

#define S(x) SUPERVISOR_##x
#define E(x) SUPERVISOR_EVENT_##x
#define A(x) SUPERVISOR_ACTION_##x
#define I(x) SUPERVISOR_INTENT_##x

static const FsmRule fsm_table[_SUPERVISOR_STATE_MAX][_SUPERVISOR_EVENT_MAX] = {
    [S(STOPPED)] = {
        [E(START)] = GO(S(STARTING), A(CLEANUP_MOUNT) | A(SPAWN)),
        [E(RESTART_REQUESTED)] = GO(S(STARTING), A(RESET_TALLY) | A(CLEANUP_MOUNT) | A(SPAWN)),
        [E(ADOPTED)] = GO(S(RUNNING), 0),
    },
    /* FAILED stays until an explicit restart (START does nothing). */
    [S(FAILED)] = {
        [E(RESTART_REQUESTED)] = GO(S(STARTING), A(RESET_TALLY) | A(CLEANUP_MOUNT) | A(SPAWN)),
        [E(ADOPTED)] = GO(S(RUNNING), 0),
        [E(STOP_REQUESTED)] = GO(S(STOPPED), 0),
    },
    [S(STARTING)] = {
        [E(READY)] = GO(S(RUNNING), A(CANCEL_TIMER)),
        /* Never mounted in time: kill the whole group, count it as a
         * failure when it is gone. */
        [E(READY_TIMEOUT)] = GOI(S(STOPPING), I(FAILURE), A(CANCEL_TIMER) | A(KILL)),
        [E(SPAWN_FAILED)] = FN(on_spawn_failed),
        [E(EXITED)] = FN(on_exited_starting),
        [E(STOP_REQUESTED)] = GOI(S(STOPPING), I(STOP), A(CANCEL_TIMER) | A(TERM)),
        [E(RESTART_REQUESTED)] = GOI(S(STOPPING), I(RESTART), A(CANCEL_TIMER) | A(TERM)),
    },
    [S(RUNNING)] = {
        [E(SPAWN_FAILED)] = FN(on_spawn_failed),
        [E(EXITED)] = FN(on_exited_running),
        [E(STOP_REQUESTED)] = GOI(S(STOPPING), I(STOP), A(CANCEL_TIMER) | A(TERM)),
        [E(RESTART_REQUESTED)] = GOI(S(STOPPING), I(RESTART), A(CANCEL_TIMER) | A(TERM)),
        [E(HANG_DETECTED)] = FN(on_hang),
    },
    [S(STOPPING)] = {
        [E(EXITED)] = FN(on_exited_stopping),
        [E(STOP_TIMEOUT)] = GO(S(STOPPING), A(KILL)),
        [E(STOP_REQUESTED)] = FN(on_stop_while_stopping),
        [E(RESTART_REQUESTED)] = FN(on_restart_while_stopping),
    },
    [S(BACKOFF)] = {
        [E(BACKOFF_ELAPSED)] = GO(S(STARTING), A(CLEANUP_MOUNT) | A(SPAWN)),
        [E(RESTART_REQUESTED)] = GO(S(STARTING), A(CANCEL_TIMER) | A(RESET_TALLY) | A(CLEANUP_MOUNT) | A(SPAWN)),
        [E(STOP_REQUESTED)] = GO(S(STOPPED), A(CANCEL_TIMER)),
    },
    /* Never spawned on the bare directory a missing volume would be
     * mounted on: it waits for the volumes, then starts as from BACKOFF
     * (the tally is kept: a daemon that dies once they are back counts). */
    [S(BLOCKED)] = {
        [E(UNBLOCKED)] = GO(S(STARTING), A(CLEANUP_MOUNT) | A(SPAWN)),
        [E(RESTART_REQUESTED)] = GO(S(STARTING), A(RESET_TALLY) | A(CLEANUP_MOUNT) | A(SPAWN)),
        [E(STOP_REQUESTED)] = GO(S(STOPPED), 0),
        [E(ADOPTED)] = GO(S(RUNNING), 0),
    },
};

int fsm_transition(const FsmInput *in, SupervisorEvent ev, FsmOutput *ret) {
    if ((int) in->state < 0 || in->state >= _SUPERVISOR_STATE_MAX || (int) ev < 0 || ev >= _SUPERVISOR_EVENT_MAX)
        return -EINVAL;
    const FsmRule *rule = &fsm_table[in->state][ev];
    FsmOutput o = { .state = in->state, .intent = in->intent, .actions = 0 };
    bool handled = rule->valid;
    if (handled && rule->fn)
        handled = rule->fn(in, &o);
    else if (handled) {
        o.state = rule->next;
        if (rule->intent != KEEP)
            o.intent = (SupervisorIntent) rule->intent;
        o.actions = rule->actions;
    }
    if (!handled) {
        *ret = (FsmOutput) { .state = in->state, .intent = in->intent, .actions = 0 };
        return -ESTALE;
    }
    /* The gate, one rule for every way to a spawn: with its volumes out
     * of service nothing starts; a stale mount is still cleaned. */
    if ((o.actions & SUPERVISOR_ACTION_SPAWN) && in->blocked) {
        if (in->state == SUPERVISOR_BLOCKED) {
            *ret = (FsmOutput) { .state = in->state, .intent = in->intent, .actions = 0 };
            return -ESTALE; /* still blocked */
        }
        o.actions &= ~SUPERVISOR_ACTION_SPAWN;
        o.state = SUPERVISOR_BLOCKED;
        o.intent = SUPERVISOR_INTENT_NONE;
    }
    *ret = o;
    return 0;
}
