/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "api-internal.h"
#include "string-table.h"
#include "util.h"

/* Finished operations stay this long, and at most this many. */
#define API_OPERATIONS_KEEP (10 * 60 * USEC_PER_SEC)
#define API_OPERATIONS_MAX 512

static const char *const api_operation_state_table[_API_OPERATION_STATE_MAX] = {
    [API_OPERATION_RUNNING] = "running",
    [API_OPERATION_SUCCEEDED] = "succeeded",
    [API_OPERATION_FAILED] = "failed",
};

DEFINE_STRING_TABLE_LOOKUP(api_operation_state, ApiOperationState);

int api_operation_create(Api *api, ApiRouteId kind, ApiOperation **ret) {
    ApiOperation *op = calloc(1, sizeof(*op));
    if (!op)
        return -ENOMEM;
    op->n_ref = 1; /* the Api's list */
    op->api = api;
    op->kind = kind;
    op->state = API_OPERATION_RUNNING;
    op->created_at = op->updated_at = now_usec(CLOCK_REALTIME);
    /* Random, so that an id from before an agent restart is not mistaken
     * for a new operation. */
    snprintf(op->id, sizeof op->id, "op-%08" PRIx32, (uint32_t) random_u64());
    ApiOperation **head = api_operations_head(api);
    op->next = *head;
    *head = op;
    *ret = api_operation_ref(op);
    return 0;
}

static void operation_free(ApiOperation *op) {
    for (size_t i = 0; i < op->n_steps; i++) {
        free(op->steps[i].description);
        free(op->steps[i].message);
    }
    free(op->steps);
    free(op->resource);
    free(op->blocked);
    json_object_put(op->result);
    free(op);
}

ApiOperation *api_operation_ref(ApiOperation *op) {
    if (op)
        op->n_ref++;
    return op;
}

ApiOperation *api_operation_unref(ApiOperation *op) {
    if (op && --op->n_ref == 0)
        operation_free(op);
    return NULL;
}

void api_operations_expire(Api *api, bool all) {
    ApiOperation **p = api_operations_head(api);
    usec_t now = now_usec(CLOCK_MONOTONIC);
    size_t kept = 0;
    while (*p) {
        ApiOperation *op = *p;
        bool drop = all || (op->state != API_OPERATION_RUNNING &&
                            (now - op->done_mono > API_OPERATIONS_KEEP || kept >= API_OPERATIONS_MAX));
        if (!drop) {
            kept++;
            p = &op->next;
            continue;
        }
        *p = op->next;
        op->next = NULL;
        op->api = NULL;
        api_operation_unref(op);
    }
}

const char *api_operation_id(const ApiOperation *op) {
    return op->id;
}

ApiOperationState api_operation_state(const ApiOperation *op) {
    return op->state;
}

bool api_operation_done(const ApiOperation *op) {
    return op->state != API_OPERATION_RUNNING;
}

int api_operation_set_resource(ApiOperation *op, const char *resource) {
    char *c = resource ? strdup(resource) : NULL;
    if (resource && !c)
        return -ENOMEM;
    free(op->resource);
    op->resource = c;
    return 0;
}

static void changed(ApiOperation *op, bool ended);

int api_operation_set_blocked(ApiOperation *op, const char *reason) {
    if (!op || streq_ptr(op->blocked, reason))
        return 0;
    char *c = reason ? strdup(reason) : NULL;
    if (reason && !c)
        return -ENOMEM;
    free(op->blocked);
    op->blocked = c;
    if (!api_operation_done(op))
        changed(op, false);
    return 0;
}

static void changed(ApiOperation *op, bool ended) {
    op->updated_at = now_usec(CLOCK_REALTIME);
    if (op->api)
        op->api->operation_changed(op->api, op, ended);
}

int api_operation_step(ApiOperation *op, const char *fmt, ...) {
    if (api_operation_done(op))
        return -ESTALE;
    ApiOperationStep *t = realloc(op->steps, sizeof(*t) * (op->n_steps + 1));
    if (!t)
        return -ENOMEM;
    op->steps = t;
    ApiOperationStep *s = &t[op->n_steps];
    *s = (ApiOperationStep) { .started_at = now_usec(CLOCK_REALTIME) };
    va_list ap;
    va_start(ap, fmt);
    int k = vasprintf(&s->description, fmt, ap);
    va_end(ap);
    if (k < 0)
        return -ENOMEM;
    changed(op, false);
    return (int) op->n_steps++;
}

void api_operation_step_done(ApiOperation *op, int step, int error, const char *fmt, ...) {
    if (step < 0 || (size_t) step >= op->n_steps)
        return;
    ApiOperationStep *s = &op->steps[step];
    s->state = error < 0 ? -1 : 1;
    s->ended_at = now_usec(CLOCK_REALTIME);
    free(s->message);
    s->message = NULL;
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(&s->message, fmt, ap) < 0)
            s->message = NULL;
        va_end(ap);
    }
    changed(op, false);
}

void api_operation_succeed(ApiOperation *op, unsigned status, json_object *result) {
    if (api_operation_done(op)) {
        json_object_put(result);
        return;
    }
    op->state = API_OPERATION_SUCCEEDED;
    op->status = status ?: 200;
    op->result = result;
    op->done_mono = now_usec(CLOCK_MONOTONIC);
    changed(op, true);
}

void api_operation_fail(ApiOperation *op, const ApiError *err) {
    if (api_operation_done(op))
        return;
    op->state = API_OPERATION_FAILED;
    op->error = *err;
    if (!op->error.status)
        api_fail(&op->error, -EIO, API_CODE_INTERNAL, "The operation failed");
    op->done_mono = now_usec(CLOCK_MONOTONIC);
    changed(op, true);
}

static json_object *unix_time(usec_t t) {
    return t ? json_object_new_double((double) t / USEC_PER_SEC) : NULL;
}

int api_operation_to_json(const ApiOperation *op, json_object **ret) {
    json_object *o = json_object_new_object(), *steps = json_object_new_array();
    if (!o || !steps) {
        json_object_put(o);
        json_object_put(steps);
        return -ENOMEM;
    }
    json_object_object_add(o, "id", json_object_new_string(op->id));
    json_object_object_add(o, "kind", json_object_new_string(api_route_id_to_string(op->kind) ?: "?"));
    json_object_object_add(o, "state", json_object_new_string(api_operation_state_to_string(op->state)));
    json_object_object_add(o, "resource", op->resource ? json_object_new_string(op->resource) : NULL);
    /* Why a running operation makes no progress now, or null. */
    json_object_object_add(o, "blocked",
                           op->blocked && !api_operation_done(op) ? json_object_new_string(op->blocked) : NULL);
    json_object_object_add(o, "created_at", unix_time(op->created_at));
    json_object_object_add(o, "updated_at", unix_time(op->updated_at));
    for (size_t i = 0; i < op->n_steps; i++) {
        const ApiOperationStep *s = &op->steps[i];
        json_object *j = json_object_new_object();
        json_object_object_add(j, "description", json_object_new_string(s->description));
        json_object_object_add(j, "state", json_object_new_string(s->state == 0 ? "running" : s->state > 0 ? "done"
                                                                                                          : "failed"));
        json_object_object_add(j, "message", s->message ? json_object_new_string(s->message) : NULL);
        json_object_object_add(j, "started_at", unix_time(s->started_at));
        json_object_object_add(j, "ended_at", unix_time(s->ended_at));
        json_object_array_add(steps, j);
    }
    json_object_object_add(o, "steps", steps);
    if (op->state == API_OPERATION_FAILED) {
        json_object *e = NULL;
        if (api_error_to_json(&op->error, &e) >= 0) {
            json_object *inner = NULL;
            json_object_object_get_ex(e, "error", &inner);
            json_object_object_add(inner, "status", json_object_new_int((int) op->error.status));
            json_object_object_add(o, "error", json_object_get(inner));
            json_object_put(e);
        }
    } else
        json_object_object_add(o, "error", NULL);
    json_object_object_add(o, "status", op->state == API_OPERATION_SUCCEEDED ? json_object_new_int((int) op->status)
                                                                           : NULL);
    json_object_object_add(o, "result", op->result ? json_object_get(op->result) : NULL);
    *ret = o;
    return 0;
}

int api_operation_answer(const ApiOperation *op, unsigned *ret_status, json_object **ret_body) {
    if (op->state == API_OPERATION_RUNNING)
        return -EBUSY;
    if (op->state == API_OPERATION_FAILED) {
        *ret_status = op->error.status;
        return api_error_to_json(&op->error, ret_body);
    }
    *ret_status = op->status;
    *ret_body = op->result ? json_object_get(op->result) : json_object_new_object();
    return *ret_body ? 0 : -ENOMEM;
}
