/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The pure half of the status API: routing (method + path -> route +
 * parameters), request-body parsing, and the error model. No I/O, no
 * HTTP library: these are unit-tested and fuzzed on their own
 * (tests/api/test-api-route.c, tests/fuzz/fuzz-api.c).
 */

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "layout.h"
#include "macro.h"

/* Every route the API answers. Paths are versioned (/v1/...), except
 * /metrics, where Prometheus scrapers look by convention. */
typedef enum ApiRouteId {
    API_ROUTE_STATUS,            /* GET    /v1/status */
    API_ROUTE_VOLUMES,           /* GET    /v1/volumes */
    API_ROUTE_VOLUME,            /* GET    /v1/volumes/{name} */
    API_ROUTE_WORKSPACES,        /* GET    /v1/workspaces */
    API_ROUTE_WORKSPACE,         /* GET    /v1/workspaces/{id} */
    API_ROUTE_WORKSPACE_CREATE,  /* POST   /v1/workspaces */
    API_ROUTE_WORKSPACE_DELETE,  /* DELETE /v1/workspaces/{id}[?destroy_data=true] */
    API_ROUTE_WORKSPACE_RESTART, /* POST   /v1/workspaces/{id}/restart */
    API_ROUTE_RELOAD,            /* POST   /v1/reload */
    API_ROUTE_CAPACITY,          /* GET    /v1/capacity */
    API_ROUTE_METRICS,           /* GET    /metrics */
    _API_ROUTE_MAX,
    _API_ROUTE_INVALID = -EINVAL,
} ApiRouteId;

/* "status", "volume", "workspace-create", ...: the label used in metrics. */
const char *api_route_id_to_string(ApiRouteId r);
ApiRouteId api_route_id_from_string(const char *s);

/* Whether a route changes state: POST/DELETE routes, which need root or
 * the socket's group (see docs/api.md, "Access"). */
bool api_route_id_is_mutating(ApiRouteId r);

/* The error model: an HTTP status, a stable machine-readable code and a
 * human message. Rendered as {"error": {"code": ..., "message": ...}}.
 * Fixed-size buffers so that filling it in can never fail. */
typedef struct ApiError {
    unsigned status;      /* 0: not set */
    char code[32];        /* "not_found", "conflict", ... */
    char message[256];
} ApiError;

/* Sets e (if not NULL) and returns -errno_value, so an ops implementation
 * can write `return api_error_set(err, -EEXIST, 409, "exists", "...")`. */
_printf_(5, 6) int api_error_set(ApiError *e, int errno_value, unsigned status,
                                 const char *code, const char *fmt, ...);

/* When e was not filled in, derives a status and code from a negative
 * errno: ENOENT->404 not_found, EEXIST/EBUSY->409 conflict, ENOSPC/EDQUOT
 * ->507 insufficient_storage, EINVAL->400 bad_request, EPERM/EACCES->403
 * forbidden, EAGAIN/ESHUTDOWN->503 unavailable, other->500 internal. */
void api_error_from_errno(ApiError *e, int r);

/* {"error": {"code": ..., "message": ...}}. Returns 0 or -ENOMEM. */
int api_error_to_json(const ApiError *e, json_object **ret);

#define API_ID_MAX LAYOUT_WORKSPACE_ID_MAX

/* The result of routing one request. `id` is the {name}/{id} path
 * parameter (NUL-terminated, "" when the route has none). */
typedef struct ApiRoute {
    ApiRouteId id;
    char param[API_ID_MAX + 1];
} ApiRoute;

/*
 * Routes method + path. `path` is the request target's path; anything from
 * '?' on is ignored (MHD hands query arguments over separately). A single
 * trailing '/' is accepted ("/v1/status/"), and nothing is percent-decoded:
 * valid names never need it.
 * On failure *err says why: 404 not_found (no such path), 405
 * method_not_allowed (path exists; *ret_allow is set to the Allow header
 * value, a static string), 400 bad_request (a path parameter that is not
 * a valid name).
 * Returns: -ENOENT, -EOPNOTSUPP (405), -EINVAL (400), 0 with *ret set.
 */
int api_route_parse(const char *method, const char *path, ApiRoute *ret,
                    const char **ret_allow, ApiError *err);

/* A parsed POST /v1/workspaces body. */
typedef struct ApiWorkspaceRequest {
    char *id;                 /* required, [a-z0-9][a-z0-9-]*, <= 64 */
    char *tenant;             /* optional (NULL), same alphabet, <= 32 */
    uint64_t quota;           /* bytes, 0: none. JSON number or "10G" */
    json_object *labels;      /* optional: object of string -> string, a reference */
} ApiWorkspaceRequest;

void api_workspace_request_done(ApiWorkspaceRequest *r);

#define API_LABELS_MAX 32
#define API_LABEL_KEY_MAX 63
#define API_LABEL_VALUE_MAX 255

/*
 * Parses and validates a POST /v1/workspaces body (JSON, at most `len`
 * bytes, need not be NUL-terminated). Unknown fields are rejected, so a
 * typo ("quotas") is an error rather than silently ignored.
 * Returns: -EINVAL with *err set (400 invalid_json / bad_request),
 * -ENOMEM, 0 with *ret filled (free with api_workspace_request_done()).
 */
int api_workspace_request_parse(const char *body, size_t len, ApiWorkspaceRequest *ret, ApiError *err);

/*
 * Parses a JSON document of at most `len` bytes with a nesting limit, and
 * rejects trailing garbage. Returns: -EINVAL (err set), -ENOMEM, 0.
 */
int api_json_parse(const char *body, size_t len, json_object **ret, ApiError *err);

/* Parses a boolean query argument: "true"/"1"/"yes" or "false"/"0"/"no";
 * NULL (absent) is false. Returns -EINVAL or 0. */
int api_parse_bool(const char *s, bool *ret);

/* True if the label key/value would be accepted in a request. */
bool api_label_key_is_valid(const char *k);
bool api_label_value_is_valid(const char *v);
