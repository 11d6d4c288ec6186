/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The API's error model: HTTP status + stable code + message. */

#include <stdarg.h>
#include <stdio.h>

#include "api-route.h"
#include "macro.h"

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

/* The one errno -> API error mapping (every handler's failure that has no
 * more specific code ends here): the status, the stable code, and what it
 * says when the caller has no words of its own. */
static const struct {
    int errno_value;
    unsigned status;
    const char *code;
    const char *message;
} errno_map[] = {
    { ENOENT, 404, "not_found", "Not found" },
    { EEXIST, 409, "exists", "Already exists" },
    { EBUSY, 409, "conflict", "In use, or in a state that does not allow it now" },
    { EINVAL, 400, "bad_request", "Invalid request" },
    { E2BIG, 413, "body_too_large", "Request body too large" },
    { EPERM, 403, "forbidden", "Not allowed" },
    { EACCES, 403, "forbidden", "Not allowed" },
    { ENOSPC, 507, "pool_full", "No space left" },
    { EDQUOT, 507, "pool_full", "Quota exhausted" },
    { EROFS, 503, "volume_unavailable", "The volume is read-only or out of service" },
    { EAGAIN, 503, "unavailable", "The agent is not ready" },
    { ESHUTDOWN, 503, "shutting_down", "The agent is shutting down" },
    { EOPNOTSUPP, 501, "not_supported", "Not supported here" },
    { ETIMEDOUT, 504, "timeout", "The operation did not finish in time" },
};

static void from_errno(ApiError *e, int r, const char *message) {
    int n = r < 0 ? -r : r;
    for (size_t i = 0; i < ELEMENTSOF(errno_map); i++)
        if (errno_map[i].errno_value == n) {
            api_error_set(e, r, errno_map[i].status, errno_map[i].code, "%s", message ?: errno_map[i].message);
            return;
        }
    if (message)
        api_error_set(e, r, 500, "internal", "%s", message);
    else
        api_error_set(e, r, 500, "internal", "Internal error: %s", strerror(n));
}

void api_error_from_errno(ApiError *e, int r) {
    if (e && e->status == 0)
        from_errno(e, r, NULL);
}

void api_error_from_errno_message(ApiError *e, int r, const char *message) {
    if (e && e->status == 0)
        from_errno(e, r, message);
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
