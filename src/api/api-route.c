/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Pure routing: method + path -> route. See api-route.h. */

#include <stdio.h>

#include "api-route.h"
#include "string-table.h"

static const char *const api_route_id_table[_API_ROUTE_MAX] = {
    [API_ROUTE_STATUS] = "status",
    [API_ROUTE_VOLUMES] = "volumes",
    [API_ROUTE_VOLUME] = "volume",
    [API_ROUTE_WORKSPACES] = "workspaces",
    [API_ROUTE_WORKSPACE] = "workspace",
    [API_ROUTE_WORKSPACE_CREATE] = "workspace-create",
    [API_ROUTE_WORKSPACE_DELETE] = "workspace-delete",
    [API_ROUTE_WORKSPACE_RESTART] = "workspace-restart",
    [API_ROUTE_RELOAD] = "reload",
    [API_ROUTE_CAPACITY] = "capacity",
    [API_ROUTE_METRICS] = "metrics",
};

DEFINE_STRING_TABLE_LOOKUP(api_route_id, ApiRouteId);

bool api_route_id_is_mutating(ApiRouteId r) {
    return r == API_ROUTE_WORKSPACE_CREATE || r == API_ROUTE_WORKSPACE_DELETE ||
           r == API_ROUTE_WORKSPACE_RESTART || r == API_ROUTE_RELOAD;
}

typedef enum ParamKind {
    PARAM_NONE,
    PARAM_VOLUME,
    PARAM_WORKSPACE,
} ParamKind;

/* One path pattern: segments, "*" is the parameter. Each method maps to
 * a route (or -1: not allowed on this path). */
typedef struct RoutePattern {
    const char *segments[4];
    ParamKind param;
    const char *allow;
    ApiRouteId get, post, delete;
} RoutePattern;

#define NONE ((ApiRouteId) -1)

static const RoutePattern patterns[] = {
    { { "v1", "status" },                  PARAM_NONE,      "GET, HEAD",         API_ROUTE_STATUS,     NONE, NONE },
    { { "v1", "volumes" },                 PARAM_NONE,      "GET, HEAD",         API_ROUTE_VOLUMES,    NONE, NONE },
    { { "v1", "volumes", "*" },            PARAM_VOLUME,    "GET, HEAD",         API_ROUTE_VOLUME,     NONE, NONE },
    { { "v1", "workspaces" },              PARAM_NONE,      "GET, HEAD, POST",   API_ROUTE_WORKSPACES, API_ROUTE_WORKSPACE_CREATE, NONE },
    { { "v1", "workspaces", "*" },         PARAM_WORKSPACE, "GET, HEAD, DELETE", API_ROUTE_WORKSPACE,  NONE, API_ROUTE_WORKSPACE_DELETE },
    { { "v1", "workspaces", "*", "restart" }, PARAM_WORKSPACE, "POST",           NONE, API_ROUTE_WORKSPACE_RESTART, NONE },
    { { "v1", "reload" },                  PARAM_NONE,      "POST",              NONE, API_ROUTE_RELOAD, NONE },
    { { "v1", "capacity" },                PARAM_NONE,      "GET, HEAD",         API_ROUTE_CAPACITY,   NONE, NONE },
    { { "metrics" },                       PARAM_NONE,      "GET, HEAD",         API_ROUTE_METRICS,    NONE, NONE },
};

#define PATH_MAX_SEGMENTS 4
#define PATH_MAX_LEN 512

int api_route_parse(const char *method, const char *path, ApiRoute *ret,
                    const char **ret_allow, ApiError *err) {
    if (!method || !path || path[0] != '/')
        return api_error_set(err, -ENOENT, 404, "not_found", "No such route");

    size_t len = strcspn(path, "?#");
    if (len > PATH_MAX_LEN)
        return api_error_set(err, -ENOENT, 404, "not_found", "No such route");
    /* One trailing slash is tolerated ("/v1/status/"), the root is not a route. */
    if (len > 1 && path[len - 1] == '/')
        len--;

    /* Split into at most PATH_MAX_SEGMENTS non-empty segments. */
    const char *seg[PATH_MAX_SEGMENTS];
    size_t seg_len[PATH_MAX_SEGMENTS];
    size_t n = 0;
    for (size_t i = 1; i <= len;) {
        size_t j = i;
        while (j < len && path[j] != '/')
            j++;
        if (j == i || n >= PATH_MAX_SEGMENTS) /* "//", or too deep */
            return api_error_set(err, -ENOENT, 404, "not_found", "No such route");
        seg[n] = path + i;
        seg_len[n] = j - i;
        n++;
        i = j + 1;
    }

    for (size_t p = 0; p < ELEMENTSOF(patterns); p++) {
        const RoutePattern *pat = &patterns[p];
        size_t m = 0;
        while (m < PATH_MAX_SEGMENTS && pat->segments[m])
            m++;
        if (m != n)
            continue;
        size_t param = SIZE_MAX;
        bool match = true;
        for (size_t k = 0; k < n && match; k++) {
            if (streq(pat->segments[k], "*"))
                param = k;
            else
                match = strlen(pat->segments[k]) == seg_len[k] &&
                        memcmp(pat->segments[k], seg[k], seg_len[k]) == 0;
        }
        if (!match)
            continue;

        ApiRouteId id = NONE;
        /* HEAD is GET without the body; MHD drops the body for us. */
        if (streq(method, "GET") || streq(method, "HEAD"))
            id = pat->get;
        else if (streq(method, "POST"))
            id = pat->post;
        else if (streq(method, "DELETE"))
            id = pat->delete;
        if (id == NONE) {
            if (ret_allow)
                *ret_allow = pat->allow;
            return api_error_set(err, -EOPNOTSUPP, 405, "method_not_allowed",
                                 "Method %.16s not allowed here (allowed: %s)", method, pat->allow);
        }

        ApiRoute r = { .id = id };
        if (param != SIZE_MAX) {
            size_t max = pat->param == PARAM_VOLUME ? LAYOUT_NAME_MAX : API_ID_MAX;
            const char *what = pat->param == PARAM_VOLUME ? "volume name" : "workspace id";
            if (seg_len[param] > max)
                return api_error_set(err, -EINVAL, 400, "bad_request",
                                     "Invalid %s: longer than %zu characters", what, max);
            memcpy(r.param, seg[param], seg_len[param]);
            r.param[seg_len[param]] = 0;
            if (!layout_name_is_valid(r.param, max))
                return api_error_set(err, -EINVAL, 400, "bad_request",
                                     "Invalid %s: use [a-z0-9][a-z0-9-]*", what);
        }
        *ret = r;
        return 0;
    }
    return api_error_set(err, -ENOENT, 404, "not_found", "No such route");
}

int api_parse_bool(const char *s, bool *ret) {
    if (!s) {
        *ret = false;
        return 0;
    }
    if (STR_IN_SET(s, "true", "1", "yes")) {
        *ret = true;
        return 0;
    }
    if (STR_IN_SET(s, "false", "0", "no")) {
        *ret = false;
        return 0;
    }
    return -EINVAL;
}
