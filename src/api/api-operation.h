/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Operations: a handle on work that outlives the request that asked for it
 * (Incus's /1.0/operations). A mutating route whose work may take a while
 * (a create that carves a volume and starts a daemon, a restart, a reload
 * that applies) gets an operation; the request waits for it up to its
 * ?wait, then answers with the result, or 202 and the operation
 * (/v1/operations/{id}), which any client can wait on later.
 *
 * The Api owns the operations (api.h: api_operation_new). The agent holds
 * a reference while the work runs, adds steps as they happen, and ends it
 * once, with a result or an error. Finished operations are kept for a
 * while (API_OPERATIONS_KEEP) for clients that come back for them.
 */

#include <json-c/json.h>

#include "api-route.h"

typedef struct ApiOperation ApiOperation;

typedef enum ApiOperationState {
    API_OPERATION_RUNNING,
    API_OPERATION_SUCCEEDED,
    API_OPERATION_FAILED,
    _API_OPERATION_STATE_MAX,
    _API_OPERATION_STATE_INVALID = -EINVAL,
} ApiOperationState;

const char *api_operation_state_to_string(ApiOperationState s);
ApiOperationState api_operation_state_from_string(const char *s);

ApiOperation *api_operation_ref(ApiOperation *op);
ApiOperation *api_operation_unref(ApiOperation *op);
DEFINE_TRIVIAL_CLEANUP_FUNC(ApiOperation *, api_operation_unref)

/* "op-1f2e3d4c". */
const char *api_operation_id(const ApiOperation *op);
ApiOperationState api_operation_state(const ApiOperation *op);
bool api_operation_done(const ApiOperation *op);

/* What the operation is about: "/v1/workspaces/ws-1" (a Location). */
int api_operation_set_resource(ApiOperation *op, const char *resource);

/* Why the operation cannot make progress now ("content-0 is not in
 * service (not mounted)"), shown as its "blocked" field while it runs;
 * NULL: it can. Returns: -ENOMEM, 0. */
int api_operation_set_blocked(ApiOperation *op, const char *reason);

/* A step: its description, then (when it ends) whether it worked. A step
 * with an error does not end the operation. printf-style; returns the
 * step's index or -ENOMEM. */
_printf_(2, 3) int api_operation_step(ApiOperation *op, const char *fmt, ...);
_printf_(4, 5) void api_operation_step_done(ApiOperation *op, int step, int error, const char *fmt, ...);

/* Ends the operation: status is the HTTP status a waiting request answers
 * (201, 200), result its body (taken; may be NULL). */
void api_operation_succeed(ApiOperation *op, unsigned status, json_object *result);
/* Ends it with an error (copied). */
void api_operation_fail(ApiOperation *op, const ApiError *err);

/* The operation's resource as JSON (GET /v1/operations/{id}). */
int api_operation_to_json(const ApiOperation *op, json_object **ret);
/* The final answer: status and body (a reference). For a failure: the
 * error's status and its JSON. Only for a finished operation. */
int api_operation_answer(const ApiOperation *op, unsigned *ret_status, json_object **ret_body);
