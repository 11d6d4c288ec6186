/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The pure half of the status API: the route table (method, path, success
 * status, mutating, query parameters, body, how long a request waits for
 * its operation), routing, query and body parsing, and the error model. No
 * I/O, no HTTP library: unit-tested and fuzzed on their own
 * (tests/api/test-api-route.c, tests/fuzz/fuzz-api.c).
 *
 * Adding a route: one value in ApiRouteId and one row in api_routes[]
 * (api-route.c); the agent's handler goes into its ApiOps table.
 */

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "api-code.h"
#include "layout.h"
#include "macro.h"

/* Every route the API answers. Paths are versioned (/v1/...), except
 * /metrics, where Prometheus scrapers look by convention. */
typedef enum ApiRouteId {
    API_ROUTE_STATUS,            /* GET    /v1/status */
    API_ROUTE_HEALTH,            /* GET    /v1/health */
    API_ROUTE_VOLUMES,           /* GET    /v1/volumes */
    API_ROUTE_VOLUME,            /* GET    /v1/volumes/{name} */
    API_ROUTE_WORKSPACES,        /* GET    /v1/workspaces */
    API_ROUTE_WORKSPACE,         /* GET    /v1/workspaces/{id} */
    API_ROUTE_WORKSPACE_CREATE,  /* POST   /v1/workspaces */
    API_ROUTE_WORKSPACE_DELETE,  /* DELETE /v1/workspaces/{id}[?destroy_data=true] */
    API_ROUTE_WORKSPACE_RESTART, /* POST   /v1/workspaces/{id}/restart */
    API_ROUTE_WORKSPACE_QUOTA,   /* PUT    /v1/workspaces/{id}/quota */
    API_ROUTE_RELOAD,            /* POST   /v1/reload */
    API_ROUTE_GC,                /* POST   /v1/gc[?dry_run=true] */
    API_ROUTE_CHECK,             /* POST   /v1/check */
    API_ROUTE_SHUTDOWN,          /* POST   /v1/shutdown[?stop_workspaces=true] */
    API_ROUTE_CAPACITY,          /* GET    /v1/capacity */
    API_ROUTE_OPERATIONS,        /* GET    /v1/operations */
    API_ROUTE_OPERATION,         /* GET    /v1/operations/{id}[?wait=S] */
    API_ROUTE_EVENTS,            /* GET    /v1/events[?since=N] (a stream) */
    API_ROUTE_METRICS,           /* GET    /metrics */
    API_ROUTE_WORKSPACE_EXPORT,  /* GET    /v1/workspaces/{id}/export (a stream: tar+zstd) */
    API_ROUTE_WORKSPACE_PLACEMENT, /* GET  /v1/workspaces/{id}/placement[?tenant=T] */
    _API_ROUTE_MAX,
    _API_ROUTE_INVALID = -EINVAL,
} ApiRouteId;

/* "status", "volume", "workspace-create", ...: the label used in metrics. */
const char *api_route_id_to_string(ApiRouteId r);
ApiRouteId api_route_id_from_string(const char *s);

typedef enum ApiParamKind {
    API_PARAM_NONE,
    API_PARAM_VOLUME,            /* a volume name, <= LAYOUT_NAME_MAX */
    API_PARAM_WORKSPACE,         /* a workspace id, <= LAYOUT_WORKSPACE_ID_MAX */
    API_PARAM_OPERATION,         /* an operation id */
} ApiParamKind;

/* The query parameters a route takes (anything else is 400). */
typedef enum ApiQueryKey {
    API_QUERY_WAIT = 1u << 0,          /* wait=SECONDS: hold the request for its operation */
    API_QUERY_DESTROY_DATA = 1u << 1,  /* destroy_data=true|false */
    API_QUERY_SINCE = 1u << 2,         /* since=SEQ: events after SEQ */
    API_QUERY_DRY_RUN = 1u << 3,       /* dry_run=true|false */
    API_QUERY_STOP_WORKSPACES = 1u << 4, /* stop_workspaces=true|false */
    API_QUERY_QUEUE = 1u << 5,         /* queue=true|false: wait for a volume out of service */
    API_QUERY_TENANT = 1u << 6,        /* tenant=NAME: the tenant a create would name */
} ApiQueryKey;

typedef enum ApiBodyKind {
    API_BODY_NONE,               /* a body is ignored */
    API_BODY_WORKSPACE,          /* a POST /v1/workspaces object (required) */
    API_BODY_QUOTA,              /* {"quota": BYTES or "10G" or null} (required) */
} ApiBodyKind;

/* One row of the route table. */
typedef struct ApiRouteSpec {
    ApiRouteId id;
    const char *method;          /* "GET" (HEAD as well), "POST", "DELETE" */
    const char *path;            /* "/v1/workspaces/{id}/restart": {x} is the parameter */
    ApiParamKind param;
    unsigned status;             /* the success status of an answer given at once */
    bool mutating;               /* needs root or the socket's group; refused
                                    while the agent starts or stops */
    bool operation;              /* the request is an operation that may run
                                    on: 202 with it unless it ends within the
                                    wait */
    bool stream;                 /* a long-lived streamed answer: the events,
                                    or a byte stream the handler hands over
                                    as an fd (ApiCall.stream, api.h) */
    bool cached;                 /* GET: its rendered answer is kept a short
                                    while, until anything changes (api-cache.c) */
    unsigned query;              /* ApiQueryKey bits */
    ApiBodyKind body;
    unsigned default_wait_sec;   /* operation routes: wait when ?wait is absent */
} ApiRouteSpec;

/* The table, indexed by ApiRouteId. */
extern const ApiRouteSpec api_routes[_API_ROUTE_MAX];
const ApiRouteSpec *api_route_spec(ApiRouteId r);

/* Whether a route changes state (its row's `mutating`). */
bool api_route_id_is_mutating(ApiRouteId r);

/* The error model: an HTTP status, a stable machine-readable code and a
 * human message. Rendered as {"error": {"code": ..., "message": ...}}.
 * Fixed-size buffers so that filling it in can never fail. */
typedef struct ApiError {
    unsigned status;      /* 0: not set */
    char code[32];        /* "not_found", "conflict", ... */
    char message[256];
} ApiError;

/*
 * The one way to fail a request: sets e (if not NULL) to code's status and
 * string (api-code.h) and the printf-formatted message, and returns
 * -|errno_value|, so an ops implementation can write
 * `return api_fail(err, -EEXIST, API_CODE_EXISTS, "...")`. errno_value
 * (positive or negative) is only what the C caller gets back; the answer's
 * status and code come from code alone, never from the errno. An error
 * already in e is overwritten (api_fail_default keeps it).
 */
_printf_(4, 5) int api_fail(ApiError *e, int errno_value, ApiCode code, const char *fmt, ...);

/* As api_fail, but only when e is not set yet: the first (most specific)
 * error wins over a generic one added by a caller. Returns -|errno_value|
 * either way. */
_printf_(4, 5) int api_fail_default(ApiError *e, int errno_value, ApiCode code, const char *fmt, ...);

/* When e was not filled in, derives a status and code from a negative
 * errno, by the one table every handler shares (api-error.c, whose rows
 * name ApiCode values):
 * ENOENT->404 not_found, EEXIST->409 exists, EBUSY->409 conflict,
 * EINVAL->400 bad_request, E2BIG->413 body_too_large, EPERM/EACCES->403
 * forbidden, ENOSPC/EDQUOT->507 pool_full, EROFS->503 volume_unavailable,
 * EAGAIN->503 unavailable, ESHUTDOWN->503 shutting_down, EOPNOTSUPP->501
 * not_supported, ETIMEDOUT->504 timeout, other->500 internal. */
void api_error_from_errno(ApiError *e, int r);
/* The same, with the caller's message instead of the table's. */
void api_error_from_errno_message(ApiError *e, int r, const char *message);

/* {"error": {"code": ..., "message": ...}}. Returns 0 or -ENOMEM. */
int api_error_to_json(const ApiError *e, json_object **ret);

#define API_ID_MAX LAYOUT_WORKSPACE_ID_MAX

/* The result of routing one request. `param` is the {x} path parameter
 * (NUL-terminated, "" when the route has none). */
typedef struct ApiRoute {
    ApiRouteId id;
    char param[API_ID_MAX + 1];
    char allow[48];       /* 405: the methods the path takes ("GET, HEAD") */
} ApiRoute;

/*
 * Routes method + path. `path` is the request target's path; anything from
 * '?' on is ignored (query arguments are checked by api_query_parse). A
 * single trailing '/' is accepted ("/v1/status/"), and nothing is
 * percent-decoded: valid names never need it.
 * On failure *err says why: 404 not_found (no such path), 405
 * method_not_allowed (path exists; ret->allow holds the Allow header
 * value), 400 bad_request (a path parameter that is not a valid name).
 * Returns: -ENOENT, -EOPNOTSUPP (405), -EINVAL (400), 0 with *ret set.
 */
int api_route_parse(const char *method, const char *path, ApiRoute *ret, ApiError *err);

/* A request's query, parsed. */
#define API_WAIT_MAX_SEC 600U
typedef struct ApiQuery {
    unsigned seen;               /* ApiQueryKey bits given so far: each at most once */
    bool has_wait;
    usec_t wait;                 /* ?wait=SECONDS, 0..API_WAIT_MAX_SEC, decimals allowed */
    bool destroy_data;
    bool has_since;
    uint64_t since;
    bool dry_run;
    bool has_stop_workspaces;
    bool stop_workspaces;
    bool queue;                  /* ?queue=true: a create or restart whose volume is out of
                                    service waits for it instead of being refused */
    char tenant[LAYOUT_NAME_MAX + 1]; /* ?tenant=NAME, "" when not given */
} ApiQuery;

/*
 * Adds one query argument (key, value; value NULL for "?key" alone) to *q,
 * checking it against the route: an argument the route does not take, a
 * repeated one, or a bad value is 400 bad_request with the reason.
 * Returns: -EINVAL (err set), 0.
 */
int api_query_parse(const ApiRouteSpec *route, const char *key, const char *value, ApiQuery *q, ApiError *err);

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
 * Parses a PUT /v1/workspaces/{id}/quota body: {"quota": N} with N bytes,
 * a size string ("10G") or null/0 (no limit); nothing else.
 * Returns: -EINVAL with *err set, 0 with *ret.
 */
int api_quota_request_parse(const char *body, size_t len, uint64_t *ret, ApiError *err);

/*
 * Parses a JSON document of at most `len` bytes with a nesting limit, and
 * rejects trailing garbage, a key given twice in one object, and strings
 * with a NUL character (json-c would keep the last duplicate and cut the
 * string at the NUL, so `{"id":"a","id":"b"}` or "nul\u0000../x" would
 * mean something other than what was sent).
 * Returns: -EINVAL (err set), -ENOMEM, 0.
 */
int api_json_parse(const char *body, size_t len, json_object **ret, ApiError *err);

/* Parses a boolean query argument: "true"/"1"/"yes" or "false"/"0"/"no";
 * NULL (absent) is false. Returns -EINVAL or 0. */
int api_parse_bool(const char *s, bool *ret);

/* True if the label key/value would be accepted in a request. */
bool api_label_key_is_valid(const char *k);
bool api_label_value_is_valid(const char *v);
