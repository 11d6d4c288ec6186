/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The content pool's check (POST /v1/check, `layoutctl check`): which
 * stubs of which workspaces reference an object the pool does not have.
 * Like the sweep it is the daemons' own tool: the gc command with `fsck`
 * in place of its last word `gc` (for the reference daemon,
 * `layoutd-wsfs fsck`, examples/wsfs/README.md), run as a child with the
 * same dirs and roots the sweep gets:
 *
 *   COMMAND... fsck --content DIR[,DIR...] --state-root DIR... --json
 *
 * It changes nothing. Its last stdout line is a JSON report ("ok",
 * "stubs_missing", "objects_missing", "missing": [...]); exit status 0
 * (nothing missing), 1 (something is), 3 (incomplete). One check runs at
 * a time; requests while it runs join it.
 */
#include <stdio.h>

#include "agent.h"
#include "child.h"
#include "log.h"
#include "util.h"

typedef struct CheckWaiter CheckWaiter;
struct CheckWaiter {
    CheckWaiter *next;
    ApiOperation *op;
};

struct AgentCheck {
    Agent *agent;
    Child *child;
    char *last_line;
    usec_t started;
    CheckWaiter *waiters;
    uint64_t runs;
    uint64_t last_objects_missing; /* of the latest complete run */
    bool has_last;
};

static void end_waiters(AgentCheck *k, const ApiError *err, unsigned status, json_object *result) {
    while (k->waiters) {
        CheckWaiter *w = k->waiters;
        k->waiters = w->next;
        if (err)
            api_operation_fail(w->op, err);
        else
            api_operation_succeed(w->op, status, json_object_get(result));
        api_operation_unref(w->op);
        free(w);
    }
}

static void on_check_line(Child *c, const char *line, void *userdata) {
    AgentCheck *k = userdata;
    if (*line) {
        free(k->last_line);
        k->last_line = strdup(line);
    }
}

static uint64_t report_u64(json_object *r, const char *key) {
    json_object *v;
    return r && json_object_object_get_ex(r, key, &v) ? json_object_get_uint64(v) : 0;
}

static void on_check_exit(Child *c, int status, const char *stderr_text, void *userdata) {
    AgentCheck *k = userdata;
    Agent *a = k->agent;
    usec_t took = now_usec(CLOCK_MONOTONIC) - k->started;
    json_object *report = k->last_line ? json_tokener_parse(k->last_line) : NULL;
    if (report && !json_object_is_type(report, json_type_object)) {
        json_object_put(report);
        report = NULL;
    }
    k->runs++;
    k->child = child_free(c);
    if (!report || (status != 0 && status != 1 && status != 3)) {
        ApiError e = {};
        api_fail(&e, -EIO, API_CODE_CHECK_FAILED, "the content pool's check failed (%s %d): %s",
                 status >= 0 ? "exit status" : "signal", status >= 0 ? status : -status,
                 stderr_text && *stderr_text ? stderr_text : "no JSON report on stdout");
        log_warning("content check failed: %s", e.message);
        end_waiters(k, &e, 0, NULL);
    } else {
        uint64_t stubs = report_u64(report, "stubs_missing"), objects = report_u64(report, "objects_missing");
        if (status != 3) {
            k->has_last = true;
            k->last_objects_missing = objects;
        }
        if (objects > 0)
            log_context(LOG_ERR, 0, &(const LogContext) { .message_id = LAYOUTD_MESSAGE_OBJECTS_MISSING },
                        "content check: %" PRIu64 " file(s) reference %" PRIu64
                        " object(s) the content pool does not have; they read as I/O errors (see `layoutctl check`)",
                        stubs, objects);
        else
            log_info("content check: %" PRIu64 " stub(s) checked, every object there%s (%.1f s)",
                     report_u64(report, "stubs_checked"), status == 3 ? "; incomplete" : "",
                     (double) took / USEC_PER_SEC);
        json_object *f = json_object_new_object();
        json_object_object_add(f, "objects_missing", json_object_new_uint64(objects));
        json_object_object_add(f, "complete", json_object_new_boolean(status != 3));
        agent_event(a, "check.done", f);
        json_object *result = json_object_new_object();
        json_object_object_add(result, "duration_seconds", json_object_new_double((double) took / USEC_PER_SEC));
        json_object_object_add(result, "report", json_object_get(report));
        end_waiters(k, NULL, 200, result);
        json_object_put(result);
    }
    json_object_put(report);
    k->last_line = mfree(k->last_line);
}

/* The gc command with its last word `gc` made `fsck`. */
static int check_command(const Pool *p, char ***ret) {
    size_t n = strv_length((const char *const *) p->gc.command);
    if (n < 2 || !streq(p->gc.command[n - 1], "gc"))
        return -EOPNOTSUPP;
    _cleanup_strv_free_ char **argv = NULL;
    int r = strv_copy((const char *const *) p->gc.command, &argv);
    if (r < 0)
        return r;
    free(argv[n - 1]);
    argv[n - 1] = strdup("fsck");
    if (!argv[n - 1])
        return -ENOMEM;
    *ret = TAKE_PTR(argv);
    return 0;
}

int agent_check_run(Agent *a, ApiOperation *op, ApiError *err) {
    const Pool *p = layout_pool(agent_layout(a), POOL_CONTENT);
    _cleanup_strv_free_ char **argv = NULL, **args = NULL;
    _cleanup_free_ char *why = NULL;
    int r;
    if (!p || !p->gc.command)
        return api_fail(err, -EOPNOTSUPP, API_CODE_NO_POOL, "the layout has no content pool with a tool to check it");
    if (!a->check) {
        a->check = calloc(1, sizeof(AgentCheck));
        if (!a->check)
            return -ENOMEM;
        a->check->agent = a;
    }
    AgentCheck *k = a->check;
    if (!k->child) {
        if (check_command(p, &argv) < 0)
            return api_fail(err, -EOPNOTSUPP, API_CODE_NOT_SUPPORTED,
                            "the content pool's tool (gc.command %s) has no check; the reference daemon's "
                            "(layoutd-wsfs gc) has one",
                            p->gc.command[0]);
        r = agent_content_pool_args(a, p, &args, &why);
        if (r == -EBUSY)
            return api_fail(err, r, API_CODE_CHECK_UNSAFE, "not checking: %s", why);
        if (r < 0)
            return r;
        for (char **x = args; *x; x++)
            if ((r = strv_extend(&argv, *x)) < 0)
                return r;
        if ((r = strv_extend(&argv, "--json")) < 0)
            return r;
        ChildCallbacks cb = { .on_line = on_check_line, .on_exit = on_check_exit };
        r = child_spawn(a->event, argv, &cb, k, &k->child);
        if (r < 0)
            return api_fail(err, r, API_CODE_CHECK_FAILED, "cannot start %s: %s", argv[0], strerror(-r));
        child_close_input(k->child);
        k->started = now_usec(CLOCK_MONOTONIC);
        log_info("content check started: %s fsck (pid %d)", argv[0], (int) child_pid(k->child));
    } else if (op)
        (void) api_operation_step(op, "joined the check already running");
    if (op) {
        CheckWaiter *w = calloc(1, sizeof(*w));
        if (!w)
            return -ENOMEM;
        w->op = api_operation_ref(op);
        w->next = k->waiters;
        k->waiters = w;
        (void) api_operation_step(op, "checking every stub against the content pool");
    }
    return 1;
}

static void check_free(Agent *a) {
    AgentCheck *k = a->check;
    if (!k)
        return;
    if (k->child) {
        k->child = child_free(k->child);
        ApiError e = {};
        api_fail(&e, -ECANCELED, API_CODE_SHUTTING_DOWN, "the agent stopped the check");
        end_waiters(k, &e, 0, NULL);
    }
    free(k->last_line);
    a->check = mfree(a->check);
}

const AgentModule agent_check_module = {
    .name = "check",
    .free = check_free,
};
