/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "fsm.h"
#include "string-table.h"

static const char *const supervisor_state_table[_SUPERVISOR_STATE_MAX] = {
    [SUPERVISOR_STOPPED] = "stopped",   [SUPERVISOR_STARTING] = "starting",
    [SUPERVISOR_RUNNING] = "running",   [SUPERVISOR_STOPPING] = "stopping",
    [SUPERVISOR_BACKOFF] = "backoff",   [SUPERVISOR_FAILED] = "failed",
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

int fsm_transition(const FsmInput *in, SupervisorEvent ev, FsmOutput *ret) {
    FsmOutput o = { .state = in->state, .intent = in->intent, .actions = 0 };
    bool handled = true;

    switch (in->state) {
    case SUPERVISOR_STOPPED:
    case SUPERVISOR_FAILED:
        switch (ev) {
        case SUPERVISOR_EVENT_START:
            if (in->state == SUPERVISOR_FAILED) {
                handled = false; /* FAILED stays until an explicit restart */
                break;
            }
            o.state = SUPERVISOR_STARTING;
            o.actions = SUPERVISOR_ACTION_CLEANUP_MOUNT | SUPERVISOR_ACTION_SPAWN;
            break;
        case SUPERVISOR_EVENT_RESTART_REQUESTED:
            o.state = SUPERVISOR_STARTING;
            o.actions = SUPERVISOR_ACTION_RESET_TALLY | SUPERVISOR_ACTION_CLEANUP_MOUNT |
                        SUPERVISOR_ACTION_SPAWN;
            break;
        case SUPERVISOR_EVENT_ADOPTED:
            o.state = SUPERVISOR_RUNNING;
            break;
        case SUPERVISOR_EVENT_STOP_REQUESTED:
            if (in->state == SUPERVISOR_FAILED)
                o.state = SUPERVISOR_STOPPED;
            else
                handled = false;
            break;
        default:
            handled = false;
        }
        break;

    case SUPERVISOR_STARTING:
    case SUPERVISOR_RUNNING:
        switch (ev) {
        case SUPERVISOR_EVENT_READY:
            if (in->state == SUPERVISOR_RUNNING) {
                handled = false;
                break;
            }
            o.state = SUPERVISOR_RUNNING;
            o.actions = SUPERVISOR_ACTION_CANCEL_TIMER;
            break;
        case SUPERVISOR_EVENT_READY_TIMEOUT:
            if (in->state != SUPERVISOR_STARTING) {
                handled = false;
                break;
            }
            /* Never mounted in time: kill the whole group, count it as a
             * failure when it is gone. */
            o.state = SUPERVISOR_STOPPING;
            o.intent = SUPERVISOR_INTENT_FAILURE;
            o.actions = SUPERVISOR_ACTION_CANCEL_TIMER | SUPERVISOR_ACTION_KILL;
            break;
        case SUPERVISOR_EVENT_SPAWN_FAILED:
            decide_after_death(in, true, &o);
            break;
        case SUPERVISOR_EVENT_EXITED:
            /* Dying before the mount was up is a failure whatever the
             * status: the daemon never served. */
            decide_after_death(in, in->exit_failed || in->state == SUPERVISOR_STARTING, &o);
            break;
        case SUPERVISOR_EVENT_STOP_REQUESTED:
            o.state = SUPERVISOR_STOPPING;
            o.intent = SUPERVISOR_INTENT_STOP;
            o.actions = SUPERVISOR_ACTION_CANCEL_TIMER | SUPERVISOR_ACTION_TERM;
            break;
        case SUPERVISOR_EVENT_RESTART_REQUESTED:
            o.state = SUPERVISOR_STOPPING;
            o.intent = SUPERVISOR_INTENT_RESTART;
            o.actions = SUPERVISOR_ACTION_CANCEL_TIMER | SUPERVISOR_ACTION_TERM;
            break;
        case SUPERVISOR_EVENT_HANG_DETECTED:
            if (in->state != SUPERVISOR_RUNNING) {
                handled = false;
                break;
            }
            o.actions = SUPERVISOR_ACTION_NOTIFY_HANG;
            if (in->restart_on_hang) {
                /* A hung daemon may not act on SIGTERM, and its unmount
                 * would wait on the stuck requests: abort the connection
                 * (stuck callers get ENOTCONN) and kill it. */
                o.state = SUPERVISOR_STOPPING;
                o.intent = SUPERVISOR_INTENT_FAILURE;
                o.actions |= SUPERVISOR_ACTION_CANCEL_TIMER | SUPERVISOR_ACTION_ABORT_CONN |
                             SUPERVISOR_ACTION_KILL;
            }
            break;
        default:
            handled = false;
        }
        break;

    case SUPERVISOR_STOPPING:
        switch (ev) {
        case SUPERVISOR_EVENT_EXITED:
            switch (in->intent) {
            case SUPERVISOR_INTENT_RESTART:
                o.state = SUPERVISOR_STARTING;
                o.intent = SUPERVISOR_INTENT_NONE;
                o.actions = SUPERVISOR_ACTION_CANCEL_TIMER | SUPERVISOR_ACTION_CLEANUP_MOUNT |
                            SUPERVISOR_ACTION_RESET_TALLY | SUPERVISOR_ACTION_SPAWN;
                break;
            case SUPERVISOR_INTENT_FAILURE:
                decide_after_death(in, true, &o);
                break;
            default:
                o.state = SUPERVISOR_STOPPED;
                o.intent = SUPERVISOR_INTENT_NONE;
                o.actions = SUPERVISOR_ACTION_CANCEL_TIMER | SUPERVISOR_ACTION_CLEANUP_MOUNT;
            }
            break;
        case SUPERVISOR_EVENT_STOP_TIMEOUT:
            o.actions = SUPERVISOR_ACTION_KILL;
            break;
        case SUPERVISOR_EVENT_STOP_REQUESTED:
            /* A stop wins over a pending restart, and is idempotent. */
            if (in->intent == SUPERVISOR_INTENT_STOP)
                handled = false;
            else
                o.intent = SUPERVISOR_INTENT_STOP;
            break;
        case SUPERVISOR_EVENT_RESTART_REQUESTED:
            if (in->intent == SUPERVISOR_INTENT_FAILURE)
                o.intent = SUPERVISOR_INTENT_RESTART;
            else
                handled = false;
            break;
        default:
            handled = false;
        }
        break;

    case SUPERVISOR_BACKOFF:
        switch (ev) {
        case SUPERVISOR_EVENT_BACKOFF_ELAPSED:
            o.state = SUPERVISOR_STARTING;
            o.actions = SUPERVISOR_ACTION_CLEANUP_MOUNT | SUPERVISOR_ACTION_SPAWN;
            break;
        case SUPERVISOR_EVENT_RESTART_REQUESTED:
            o.state = SUPERVISOR_STARTING;
            o.actions = SUPERVISOR_ACTION_CANCEL_TIMER | SUPERVISOR_ACTION_RESET_TALLY |
                        SUPERVISOR_ACTION_CLEANUP_MOUNT | SUPERVISOR_ACTION_SPAWN;
            break;
        case SUPERVISOR_EVENT_STOP_REQUESTED:
            o.state = SUPERVISOR_STOPPED;
            o.actions = SUPERVISOR_ACTION_CANCEL_TIMER;
            break;
        default:
            handled = false;
        }
        break;

    default:
        return -EINVAL;
    }

    if (!handled) {
        *ret = (FsmOutput) { .state = in->state, .intent = in->intent, .actions = 0 };
        return -ESTALE;
    }
    *ret = o;
    return 0;
}
