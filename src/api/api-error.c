/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The API's error model: HTTP status + stable code + message. */

#include <stdarg.h>
#include <stdio.h>

#include "api-route.h"

int api_error_set(ApiError *e, int errno_value, unsigned status, const char *code, const char *fmt, ...) {
    if (e) {
        e->status = status;
        snprintf(e->code, sizeof(e->code), "%s", code ?: "internal");
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->message, sizeof(e->message), fmt, ap);
        va_end(ap);
    }
    return errno_value < 0 ? errno_value : -errno_value;
}

int api_error_set_default(ApiError *e, int errno_value, unsigned status, const char *code, const char *fmt, ...) {
    if (e && e->status == 0) {
        e->status = status;
        snprintf(e->code, sizeof(e->code), "%s", code ?: "internal");
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->message, sizeof(e->message), fmt, ap);
        va_end(ap);
    }
    return errno_value < 0 ? errno_value : -errno_value;
}

void api_error_from_errno(ApiError *e, int r) {
    if (!e || e->status != 0)
        return;
    switch (r < 0 ? -r : r) {
    case ENOENT:
        api_error_set(e, r, 404, "not_found", "Not found");
        break;
    case EEXIST:
        api_error_set(e, r, 409, "exists", "Already exists");
        break;
    case EBUSY:
        api_error_set(e, r, 409, "busy", "Busy, try again later");
        break;
    case ENOSPC:
    case EDQUOT:
        api_error_set(e, r, 507, "insufficient_storage", "No space left in the pool");
        break;
    case EINVAL:
        api_error_set(e, r, 400, "bad_request", "Invalid request");
        break;
    case EPERM:
    case EACCES:
        api_error_set(e, r, 403, "forbidden", "Not allowed");
        break;
    case EAGAIN:
    case ESHUTDOWN:
        api_error_set(e, r, 503, "unavailable", "The agent is not ready");
        break;
    case EOPNOTSUPP:
        api_error_set(e, r, 501, "not_implemented", "Not implemented by this agent");
        break;
    case ETIMEDOUT:
        api_error_set(e, r, 504, "timeout", "The operation did not finish in time");
        break;
    default:
        api_error_set(e, r, 500, "internal", "Internal error: %s", strerror(r < 0 ? -r : r));
        break;
    }
}

int api_error_to_json(const ApiError *e, json_object **ret) {
    json_object *root = json_object_new_object(), *inner = json_object_new_object();
    if (!root || !inner) {
        json_object_put(root);
        json_object_put(inner);
        return -ENOMEM;
    }
    json_object_object_add(root, "error", inner);
    if (json_object_object_add(inner, "code", json_object_new_string(e->code[0] ? e->code : "internal")) < 0 ||
        json_object_object_add(inner, "message", json_object_new_string(e->message)) < 0) {
        json_object_put(root);
        return -ENOMEM;
    }
    *ret = root;
    return 0;
}
