/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The API's error codes: one row per code, status and meaning (api-code.h). */

#include "api-code.h"

const ApiCodeSpec api_codes[_API_CODE_MAX] = {
    [API_CODE_BAD_REQUEST] = { 400, "bad_request", "A path parameter, query parameter, field or header is invalid" },
    [API_CODE_INVALID_JSON] = { 400, "invalid_json", "The body is not one JSON document" },
    [API_CODE_INVALID_LAYOUT] = { 400, "invalid_layout", "The layout to load does not validate" },
    [API_CODE_FORBIDDEN] = { 403, "forbidden", "The peer, socket or listener may not do this" },
    [API_CODE_NOT_FOUND] = { 404, "not_found", "No such route, volume, workspace or operation" },
    [API_CODE_METHOD_NOT_ALLOWED] = { 405, "method_not_allowed", "The path exists, the method does not (see Allow:)" },
    [API_CODE_EXISTS] = { 409, "exists", "The workspace, its directory or its mount point exists already" },
    [API_CODE_CONFLICT] = { 409, "conflict", "The object is in a state that does not allow it now" },
    [API_CODE_REMOVED] = { 409, "removed", "The workspace was removed while the operation waited for it" },
    [API_CODE_BLOCKED] = { 409, "blocked", "A volume the request needs is out of service now" },
    [API_CODE_GC_UNSAFE] = { 409, "gc_unsafe", "A volume that may hold references is out of service: no sweep" },
    [API_CODE_CHECK_UNSAFE] = { 409, "check_unsafe", "A volume that may hold references is out of service: no check" },
    [API_CODE_NO_GC] = { 409, "no_gc", "The layout has no content pool sweep" },
    [API_CODE_NO_POOL] = { 409, "no_pool", "The layout has no content pool with a tool to check it" },
    [API_CODE_PACKAGE_STORE] = { 409, "package_store", "A first quota on a workspace that has a package store" },
    [API_CODE_QUOTA_CHANGING] = { 409, "quota_changing", "A quota change of the workspace is under way" },
    [API_CODE_BODY_TOO_LARGE] = { 413, "body_too_large", "The body is over the limit (api.max_body)" },
    [API_CODE_INTERNAL] = { 500, "internal", "A bug or an unexpected failure" },
    [API_CODE_DAEMON_FAILED] = { 500, "daemon_failed", "The workspace's daemon exited before it was ready" },
    [API_CODE_CARVE_FAILED] = { 500, "carve_failed", "Carving a new volume failed" },
    [API_CODE_SPAWN_FAILED] = { 500, "spawn_failed", "The workspace's daemon could not be started" },
    [API_CODE_APPLY_FAILED] = { 500, "apply_failed", "A layout was loaded but applying it failed" },
    [API_CODE_REMOVE_FAILED] = { 500, "remove_failed", "Removing the workspace failed" },
    [API_CODE_GC_FAILED] = { 500, "gc_failed", "The content pool's sweep failed" },
    [API_CODE_CHECK_FAILED] = { 500, "check_failed", "The content pool's check failed" },
    [API_CODE_RECORD_UNSAVED] = { 500, "record_unsaved", "The state record could not be written" },
    [API_CODE_NOT_SUPPORTED] = { 501, "not_supported", "The agent, the layout or this host cannot do it" },
    [API_CODE_NOT_READY] = { 503, "not_ready", "A change while the agent starts" },
    [API_CODE_SHUTTING_DOWN] = { 503, "shutting_down", "The agent is stopping" },
    [API_CODE_NOT_SUPERVISING] = { 503, "not_supervising", "The agent runs without workspaces (--no-workspaces)" },
    [API_CODE_VOLUME_UNAVAILABLE] = { 503, "volume_unavailable", "The volume is read-only or out of service" },
    [API_CODE_UNAVAILABLE] = { 503, "unavailable", "The agent cannot serve the request now" },
    [API_CODE_TIMEOUT] = { 504, "timeout", "An operation did not finish in time" },
    [API_CODE_POOL_FULL] = { 507, "pool_full", "No room for the workspace in the pool" },
    [API_CODE_HOST_FULL] = { 507, "host_full", "The host filesystem under the images cannot hold another volume" },
};

const ApiCodeSpec *api_code_spec(ApiCode c) {
    if ((int) c < 0 || c >= _API_CODE_MAX)
        return &api_codes[API_CODE_INTERNAL];
    return &api_codes[c];
}
