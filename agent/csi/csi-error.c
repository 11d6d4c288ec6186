/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* layoutd's answers in the CSI spec's error codes (csi-plugin.h): the tables
 * only, pure; csi-fail.c fails a call with them. */

#include "csi-plugin.h"
#include "util.h"

/* One row per answer the plugin may get; the first that matches wins
 * (code NULL: any code of that status). */
static const struct {
    long status;
    const char *code;
    grpc_status_code grpc;
} reply_codes[] = {
    /* No room: a slot (pool_full: every state volume at its bound and
     * max_volumes reached) or space (host_full, insufficient_storage). */
    { 507, NULL, GRPC_STATUS_RESOURCE_EXHAUSTED },
    { 400, NULL, GRPC_STATUS_INVALID_ARGUMENT },
    { 403, NULL, GRPC_STATUS_PERMISSION_DENIED },
    { 404, NULL, GRPC_STATUS_NOT_FOUND },
    /* Being created or removed by an earlier call: the CO retries. */
    { 409, "conflict", GRPC_STATUS_ABORTED },
    { 409, "exists", GRPC_STATUS_ALREADY_EXISTS },
    { 409, "removed", GRPC_STATUS_ABORTED },
    /* A volume it needs is out of service: the CO retries with backoff,
     * rather than the plugin waiting out the call's deadline. */
    { 409, "blocked", GRPC_STATUS_UNAVAILABLE },
    { 409, NULL, GRPC_STATUS_FAILED_PRECONDITION },
    /* Starting, stopping, a volume out of service: try again later. */
    { 503, NULL, GRPC_STATUS_UNAVAILABLE },
    /* The daemon died before it was ready: layoutd restarts it with
     * backoff, so a retry may well find it running. */
    { 500, "daemon_failed", GRPC_STATUS_UNAVAILABLE },
    { 500, "spawn_failed", GRPC_STATUS_UNAVAILABLE },
    { 500, "record_unsaved", GRPC_STATUS_UNAVAILABLE },
    { 501, NULL, GRPC_STATUS_FAILED_PRECONDITION },
};

static const char *const status_names[] = {
    [GRPC_STATUS_OK] = "OK",
    [GRPC_STATUS_CANCELLED] = "CANCELLED",
    [GRPC_STATUS_UNKNOWN] = "UNKNOWN",
    [GRPC_STATUS_INVALID_ARGUMENT] = "INVALID_ARGUMENT",
    [GRPC_STATUS_DEADLINE_EXCEEDED] = "DEADLINE_EXCEEDED",
    [GRPC_STATUS_NOT_FOUND] = "NOT_FOUND",
    [GRPC_STATUS_ALREADY_EXISTS] = "ALREADY_EXISTS",
    [GRPC_STATUS_PERMISSION_DENIED] = "PERMISSION_DENIED",
    [GRPC_STATUS_RESOURCE_EXHAUSTED] = "RESOURCE_EXHAUSTED",
    [GRPC_STATUS_FAILED_PRECONDITION] = "FAILED_PRECONDITION",
    [GRPC_STATUS_ABORTED] = "ABORTED",
    [GRPC_STATUS_OUT_OF_RANGE] = "OUT_OF_RANGE",
    [GRPC_STATUS_UNIMPLEMENTED] = "UNIMPLEMENTED",
    [GRPC_STATUS_INTERNAL] = "INTERNAL",
    [GRPC_STATUS_UNAVAILABLE] = "UNAVAILABLE",
    [GRPC_STATUS_DATA_LOSS] = "DATA_LOSS",
    [GRPC_STATUS_UNAUTHENTICATED] = "UNAUTHENTICATED",
};

const char *csi_status_to_string(grpc_status_code code) {
    return (unsigned) code < ELEMENTSOF(status_names) && status_names[code] ? status_names[code] : "?";
}

grpc_status_code csi_error_code_for_reply(long http_status, const char *api_code) {
    for (size_t i = 0; i < ELEMENTSOF(reply_codes); i++)
        if (reply_codes[i].status == http_status && (!reply_codes[i].code || streq_ptr(reply_codes[i].code, api_code)))
            return reply_codes[i].grpc;
    return GRPC_STATUS_INTERNAL;
}

grpc_status_code csi_error_code_for_errno(int r) {
    switch (r) {
    case -ECONNREFUSED:
    case -ENOENT:
    case -ECONNRESET:
    case -ETIMEDOUT:
    case -ECANCELED:
        return GRPC_STATUS_UNAVAILABLE;
    case -ENOMEM:
        return GRPC_STATUS_RESOURCE_EXHAUSTED;
    default:
        return GRPC_STATUS_INTERNAL;
    }
}
