/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The API's error model: HTTP status + stable code + message. */

#include <stdarg.h>
#include <stdio.h>

#include "api-route.h"
#include "macro.h"

/* Both entry points fill e the same way; only whether they may overwrite
 * differs. */
_printf_(3, 0) static void fill(ApiError *e, ApiCode code, const char *fmt, va_list ap) {
    const ApiCodeSpec *s = api_code_spec(code);
    e->status = s->status;
    snprintf(e->code, sizeof(e->code), "%s", s->code);
    vsnprintf(e->message, sizeof(e->message), fmt, ap);
}

int api_fail(ApiError *e, int errno_value, ApiCode code, const char *fmt, ...) {
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        fill(e, code, fmt, ap);
        va_end(ap);
    }
    return errno_value < 0 ? errno_value : -errno_value;
}

int api_fail_default(ApiError *e, int errno_value, ApiCode code, const char *fmt, ...) {
    if (e && e->status == 0) {
        va_list ap;
        va_start(ap, fmt);
        fill(e, code, fmt, ap);
        va_end(ap);
    }
    return errno_value < 0 ? errno_value : -errno_value;
}

/* The one errno -> API error mapping (every handler's failure that has no
 * more specific code ends here): the code (whose row in api-code.c gives
 * the status and string), and what it says when the caller has no words
 * of its own. */
static const struct {
    int errno_value;
    ApiCode code;
    const char *message;
} errno_map[] = {
    { ENOENT, API_CODE_NOT_FOUND, "Not found" },
    { EEXIST, API_CODE_EXISTS, "Already exists" },
    { EBUSY, API_CODE_CONFLICT, "In use, or in a state that does not allow it now" },
    { EINVAL, API_CODE_BAD_REQUEST, "Invalid request" },
    { E2BIG, API_CODE_BODY_TOO_LARGE, "Request body too large" },
    { EPERM, API_CODE_FORBIDDEN, "Not allowed" },
    { EACCES, API_CODE_FORBIDDEN, "Not allowed" },
    { ENOSPC, API_CODE_POOL_FULL, "No space left" },
    { EDQUOT, API_CODE_POOL_FULL, "Quota exhausted" },
    { EROFS, API_CODE_VOLUME_UNAVAILABLE, "The volume is read-only or out of service" },
    { EAGAIN, API_CODE_UNAVAILABLE, "The agent is not ready" },
    { ESHUTDOWN, API_CODE_SHUTTING_DOWN, "The agent is shutting down" },
    { EOPNOTSUPP, API_CODE_NOT_SUPPORTED, "Not supported here" },
    { ETIMEDOUT, API_CODE_TIMEOUT, "The operation did not finish in time" },
};

static void from_errno(ApiError *e, int r, const char *message) {
    int n = r < 0 ? -r : r;
    for (size_t i = 0; i < ELEMENTSOF(errno_map); i++)
        if (errno_map[i].errno_value == n) {
            api_fail(e, r, errno_map[i].code, "%s", message ?: errno_map[i].message);
            return;
        }
    if (message)
        api_fail(e, r, API_CODE_INTERNAL, "%s", message);
    else
        api_fail(e, r, API_CODE_INTERNAL, "Internal error: %s", strerror(n));
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
