/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A volume's workspace, through the layoutd API only (csi-plugin.h):
 * create it and wait for its daemon (POST ?wait=, then the operation's
 * ?wait=), find it, remove it with its data.
 *
 * Waiting: a create this call made is waited for with the API's own
 * ?wait= (on the request, then on its operation). A workspace that an
 * earlier call began (the CO gave up on it at its deadline, and retried)
 * has an operation this call does not know, so it is watched with GET
 * /v1/workspaces/{id} at a growing interval (100 ms to 1 s) until it runs
 * or the deadline is reached.
 */

#include <stdio.h>

#include "csi-plugin.h"
#include "csi-volume.h"
#include "util.h"

#define CSI_API_MAX_WAIT (600 * USEC_PER_SEC)
/* What a request may take beyond the ?wait= it asks for. */
#define CSI_API_SLACK (10 * USEC_PER_SEC)
#define CSI_POLL_MIN (100 * USEC_PER_MSEC)
#define CSI_POLL_MAX USEC_PER_SEC

usec_t csi_time_left(usec_t deadline) {
    usec_t now = now_usec(CLOCK_MONOTONIC);
    usec_t left = deadline > now ? deadline - now : 0;
    return CLAMP(left, USEC_PER_SEC, CSI_API_MAX_WAIT);
}

static usec_t call_deadline(CsiCall *c) {
    usec_t d = csi_call_deadline(c);
    return d == USEC_INFINITY ? now_usec(CLOCK_MONOTONIC) + CSI_DEFAULT_WAIT : d;
}

/* ?wait= for the time left, leaving a second to answer the CO. */
static void wait_query(char *buf, size_t n, usec_t deadline) {
    usec_t left = csi_time_left(deadline);
    left = left > 2 * USEC_PER_SEC ? left - USEC_PER_SEC : left;
    snprintf(buf, n, "wait=%.1f", (double) left / USEC_PER_SEC);
}

static const char *daemon_state(json_object *ws) {
    return csi_json_str(csi_json_obj(ws, "daemon"), "state") ?: "unknown";
}

int csi_workspace_get(CsiCall *c, CsiPlugin *p, const char *volume_id, const char *id, json_object **ret) {
    char path[128], what[160];
    snprintf(path, sizeof path, "/v1/workspaces/%s", id);
    snprintf(what, sizeof what, "looking up workspace %s", id);
    CsiApiReply reply = {};
    int r = csi_api_call(p->api, "GET", path, NULL, 10 * USEC_PER_SEC, &reply);
    if (r >= 0 && reply.status == 404) {
        csi_api_reply_done(&reply);
        return -ENOENT;
    }
    if (r < 0 || reply.status != 200) {
        csi_fail_api(c, p, r, &reply, what);
        csi_api_reply_done(&reply);
        return r < 0 ? r : -EIO;
    }
    if (volume_id && !csi_volume_is_ours(reply.body, volume_id)) {
        csi_api_reply_done(&reply);
        return -ENOENT;
    }
    *ret = TAKE_PTR(reply.body);
    return 0;
}

/* A create's operation, waited for; on success *ret is its result (the
 * workspace). Returns: 1 still running at the deadline, <0 with c failed, 0. */
static int wait_operation(CsiCall *c, CsiPlugin *p, const char *op, const char *id, usec_t deadline,
                          json_object **ret) {
    char path[192], q[32], what[160];
    wait_query(q, sizeof q, deadline);
    snprintf(path, sizeof path, "/v1/operations/%s?%s", op, q);
    snprintf(what, sizeof what, "waiting for workspace %s (operation %s)", id, op);
    CsiApiReply reply = {};
    int r = csi_api_call(p->api, "GET", path, NULL, csi_time_left(deadline) + CSI_API_SLACK, &reply);
    if (r < 0 || reply.status != 200) {
        if (r >= 0 && reply.status == 404) { /* expired: only after 10 minutes */
            csi_api_reply_done(&reply);
            return 1;
        }
        csi_fail_api(c, p, r, &reply, what);
        csi_api_reply_done(&reply);
        return -EIO;
    }
    const char *state = csi_json_str(reply.body, "state");
    int ret_r = 0;
    if (state && streq(state, "succeeded")) {
        json_object *res = csi_json_obj(reply.body, "result");
        *ret = res ? json_object_get(res) : NULL;
    } else if (state && streq(state, "failed")) {
        json_object *e = csi_json_obj(reply.body, "error");
        int64_t status = 500;
        (void) csi_json_int(e, "status", &status);
        const char *code = csi_json_str(e, "code"), *msg = csi_json_str(e, "message");
        csi_call_fail(c, csi_error_code_for_reply((long) status, code), "creating workspace %s failed: %s: %s", id,
                      code ?: "error", msg ?: "(no message)");
        ret_r = -EIO;
    } else
        ret_r = 1;
    csi_api_reply_done(&reply);
    return ret_r;
}

/* POST /v1/workspaces. Returns: 1 (not done: look again), <0 with c
 * failed, 0 with *ret (the workspace, its daemon running). */
static int create(CsiCall *c, CsiPlugin *p, const char *id, json_object *body, usec_t deadline, json_object **ret) {
    char path[64], q[32], what[160];
    wait_query(q, sizeof q, deadline);
    snprintf(path, sizeof path, "/v1/workspaces?%s", q);
    snprintf(what, sizeof what, "creating workspace %s", id);
    CsiApiReply reply = {};
    int r = csi_api_call(p->api, "POST", path, body, csi_time_left(deadline) + CSI_API_SLACK, &reply);
    if (r < 0) {
        csi_fail_api(c, p, r, &reply, what);
        return r;
    }
    int ret_r;
    if (reply.status == 201) {
        *ret = TAKE_PTR(reply.body);
        ret_r = 0;
    } else if (reply.status == 202) {
        const char *op = csi_json_str(csi_json_obj(reply.body, "operation"), "id");
        ret_r = op ? wait_operation(c, p, op, id, deadline, ret) : 1;
    } else if (reply.status == 409 && !streq_ptr(csi_api_reply_error_code(&reply), "blocked"))
        ret_r = 1; /* an earlier call is creating it */
    else {
        csi_fail_api(c, p, 0, &reply, what);
        ret_r = -EIO;
    }
    csi_api_reply_done(&reply);
    return ret_r;
}

int csi_workspace_ensure(CsiCall *c, CsiPlugin *p, const char *volume_id, json_object *body, json_object **ret) {
    const char *id = csi_json_str(body, "id");
    usec_t deadline = call_deadline(c), interval = CSI_POLL_MIN;
    const char *last = "not created";

    for (;;) {
        _cleanup_json_ json_object *ws = NULL;
        int r = csi_workspace_get(c, p, NULL, id, &ws);
        if (r < 0 && r != -ENOENT)
            return r;
        if (r >= 0) {
            _cleanup_free_ char *why = NULL;
            if (!csi_volume_matches(ws, body, &why)) {
                csi_call_fail(c, GRPC_STATUS_ALREADY_EXISTS, "volume %s: workspace %s exists with %s", volume_id,
                              id, why ?: "other attributes");
                return -EEXIST;
            }
            json_object *active = NULL;
            bool is_active = json_object_object_get_ex(ws, "active", &active) && json_object_get_boolean(active);
            last = daemon_state(ws);
            if (!is_active)
                r = -ENOENT; /* its data was kept: asking for it again reclaims it */
            else if (streq(last, "running")) {
                *ret = TAKE_PTR(ws);
                return 0;
            } else if (streq(last, "failed")) {
                csi_call_fail(c, GRPC_STATUS_FAILED_PRECONDITION,
                              "the FUSE daemon of workspace %s is in a crash loop and not restarted; see "
                              "layoutctl show %s, then layoutctl restart %s", id, id, id);
                return -EIO;
            }
        }
        if (r == -ENOENT) {
            _cleanup_json_ json_object *made = NULL;
            r = create(c, p, id, body, deadline, &made);
            if (r < 0)
                return r;
            if (r == 0 && made && streq(daemon_state(made), "running")) {
                *ret = TAKE_PTR(made);
                return 0;
            }
        }
        if (now_usec(CLOCK_MONOTONIC) + interval >= deadline) {
            csi_call_fail(c, GRPC_STATUS_DEADLINE_EXCEEDED,
                          "workspace %s is not serving yet (its daemon is %s); layoutd goes on, and a retry "
                          "picks it up", id, last);
            return -ETIMEDOUT;
        }
        if (csi_call_sleep(c, interval) < 0) {
            csi_call_fail(c, GRPC_STATUS_UNAVAILABLE, "layoutd-csi is stopping");
            return -ECANCELED;
        }
        interval = MIN(interval * 2, CSI_POLL_MAX);
    }
}

int csi_workspace_remove(CsiCall *c, CsiPlugin *p, const char *id) {
    char path[160], q[32], what[160];
    usec_t deadline = call_deadline(c);
    wait_query(q, sizeof q, deadline);
    snprintf(path, sizeof path, "/v1/workspaces/%s?destroy_data=true&%s", id, q);
    snprintf(what, sizeof what, "removing workspace %s", id);
    CsiApiReply reply = {};
    int r = csi_api_call(p->api, "DELETE", path, NULL, csi_time_left(deadline) + CSI_API_SLACK, &reply);
    if (r >= 0 && (reply.status == 200 || reply.status == 404)) {
        csi_api_reply_done(&reply);
        return 0;
    }
    if (r >= 0 && reply.status == 202) {
        /* The data takes longer to delete than the CO waits: the removal
         * goes on in layoutd, and the CO's retry finds it gone. */
        csi_call_fail(c, GRPC_STATUS_DEADLINE_EXCEEDED, "workspace %s is still being removed", id);
        csi_api_reply_done(&reply);
        return -ETIMEDOUT;
    }
    csi_fail_api(c, p, r, &reply, what);
    csi_api_reply_done(&reply);
    return r < 0 ? r : -EIO;
}
