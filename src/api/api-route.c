/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Pure routing: the route table, method + path -> route, query arguments. */

#include <math.h>
#include <stdio.h>

#include "api-route.h"
#include "string-table.h"

/* One row per route; a route is added here and nowhere else in src/api. */
const ApiRouteSpec api_routes[_API_ROUTE_MAX] = {
    [API_ROUTE_STATUS] = { API_ROUTE_STATUS, "GET", "/v1/status", API_PARAM_NONE, 200 },
    [API_ROUTE_HEALTH] = { API_ROUTE_HEALTH, "GET", "/v1/health", API_PARAM_NONE, 200 },
    [API_ROUTE_VOLUMES] = { API_ROUTE_VOLUMES, "GET", "/v1/volumes", API_PARAM_NONE, 200, .cached = true },
    [API_ROUTE_VOLUME] = { API_ROUTE_VOLUME, "GET", "/v1/volumes/{name}", API_PARAM_VOLUME, 200, .cached = true },
    [API_ROUTE_WORKSPACES] = { API_ROUTE_WORKSPACES, "GET", "/v1/workspaces", API_PARAM_NONE, 200, .cached = true },
    [API_ROUTE_WORKSPACE] = { API_ROUTE_WORKSPACE, "GET", "/v1/workspaces/{id}", API_PARAM_WORKSPACE, 200,
                              .cached = true },
    [API_ROUTE_WORKSPACE_CREATE] = { API_ROUTE_WORKSPACE_CREATE, "POST", "/v1/workspaces", API_PARAM_NONE, 201,
                                     .mutating = true, .operation = true,
                                     .query = API_QUERY_WAIT | API_QUERY_QUEUE, .body = API_BODY_WORKSPACE,
                                     .default_wait_sec = 60 },
    [API_ROUTE_WORKSPACE_DELETE] = { API_ROUTE_WORKSPACE_DELETE, "DELETE", "/v1/workspaces/{id}",
                                     API_PARAM_WORKSPACE, 200, .mutating = true, .operation = true,
                                     .query = API_QUERY_WAIT | API_QUERY_DESTROY_DATA, .default_wait_sec = 60 },
    [API_ROUTE_WORKSPACE_RESTART] = { API_ROUTE_WORKSPACE_RESTART, "POST", "/v1/workspaces/{id}/restart",
                                      API_PARAM_WORKSPACE, 200, .mutating = true, .operation = true,
                                      .query = API_QUERY_WAIT | API_QUERY_QUEUE, .default_wait_sec = 0 },
    [API_ROUTE_WORKSPACE_QUOTA] = { API_ROUTE_WORKSPACE_QUOTA, "PUT", "/v1/workspaces/{id}/quota",
                                    API_PARAM_WORKSPACE, 200, .mutating = true, .operation = true,
                                    .query = API_QUERY_WAIT, .body = API_BODY_QUOTA, .default_wait_sec = 60 },
    [API_ROUTE_RELOAD] = { API_ROUTE_RELOAD, "POST", "/v1/reload", API_PARAM_NONE, 200, .mutating = true,
                           .operation = true, .query = API_QUERY_WAIT, .default_wait_sec = 60 },
    [API_ROUTE_GC] = { API_ROUTE_GC, "POST", "/v1/gc", API_PARAM_NONE, 200, .mutating = true, .operation = true,
                       .query = API_QUERY_WAIT | API_QUERY_DRY_RUN, .default_wait_sec = 0 },
    /* Reads only, but walks every workspace's files under the pool lock:
     * for root and the socket's group, as the sweep is. */
    [API_ROUTE_CHECK] = { API_ROUTE_CHECK, "POST", "/v1/check", API_PARAM_NONE, 200, .mutating = true,
                          .operation = true, .query = API_QUERY_WAIT, .default_wait_sec = 0 },
    /* Answered at once (202): the agent is going away, so there is nothing
     * to wait on through it; the client watches the socket instead. */
    [API_ROUTE_SHUTDOWN] = { API_ROUTE_SHUTDOWN, "POST", "/v1/shutdown", API_PARAM_NONE, 202, .mutating = true,
                             .query = API_QUERY_STOP_WORKSPACES },
    [API_ROUTE_CAPACITY] = { API_ROUTE_CAPACITY, "GET", "/v1/capacity", API_PARAM_NONE, 200 },
    [API_ROUTE_OPERATIONS] = { API_ROUTE_OPERATIONS, "GET", "/v1/operations", API_PARAM_NONE, 200 },
    [API_ROUTE_OPERATION] = { API_ROUTE_OPERATION, "GET", "/v1/operations/{id}", API_PARAM_OPERATION, 200,
                              .query = API_QUERY_WAIT },
    [API_ROUTE_EVENTS] = { API_ROUTE_EVENTS, "GET", "/v1/events", API_PARAM_NONE, 200, .stream = true,
                           .query = API_QUERY_SINCE },
    /* cached: the engine's families only; the API's own are always fresh. */
    [API_ROUTE_METRICS] = { API_ROUTE_METRICS, "GET", "/metrics", API_PARAM_NONE, 200, .cached = true },
    /* Reads only, but hands out every byte of a workspace: for root and
     * the socket's group, as check is. */
    [API_ROUTE_WORKSPACE_EXPORT] = { API_ROUTE_WORKSPACE_EXPORT, "GET", "/v1/workspaces/{id}/export",
                                     API_PARAM_WORKSPACE, 200, .mutating = true, .stream = true },
    /* Where a create of {id} would go now, and why (`layoutctl why`): the
     * agent's own decision, in flight creates and carves counted. The id
     * need not exist. */
    [API_ROUTE_WORKSPACE_PLACEMENT] = { API_ROUTE_WORKSPACE_PLACEMENT, "GET", "/v1/workspaces/{id}/placement",
                                        API_PARAM_WORKSPACE, 200, .query = API_QUERY_TENANT },
};

static const char *const api_route_id_table[_API_ROUTE_MAX] = {
    [API_ROUTE_STATUS] = "status",
    [API_ROUTE_HEALTH] = "health",
    [API_ROUTE_VOLUMES] = "volumes",
    [API_ROUTE_VOLUME] = "volume",
    [API_ROUTE_WORKSPACES] = "workspaces",
    [API_ROUTE_WORKSPACE] = "workspace",
    [API_ROUTE_WORKSPACE_CREATE] = "workspace-create",
    [API_ROUTE_WORKSPACE_DELETE] = "workspace-delete",
    [API_ROUTE_WORKSPACE_RESTART] = "workspace-restart",
    [API_ROUTE_WORKSPACE_QUOTA] = "workspace-quota",
    [API_ROUTE_RELOAD] = "reload",
    [API_ROUTE_GC] = "gc",
    [API_ROUTE_CHECK] = "check",
    [API_ROUTE_SHUTDOWN] = "shutdown",
    [API_ROUTE_CAPACITY] = "capacity",
    [API_ROUTE_OPERATIONS] = "operations",
    [API_ROUTE_OPERATION] = "operation",
    [API_ROUTE_EVENTS] = "events",
    [API_ROUTE_METRICS] = "metrics",
    [API_ROUTE_WORKSPACE_EXPORT] = "workspace-export",
    [API_ROUTE_WORKSPACE_PLACEMENT] = "workspace-placement",
};

DEFINE_STRING_TABLE_LOOKUP(api_route_id, ApiRouteId);

const ApiRouteSpec *api_route_spec(ApiRouteId r) {
    if ((int) r < 0 || r >= _API_ROUTE_MAX)
        return NULL;
    return &api_routes[r];
}

bool api_route_id_is_mutating(ApiRouteId r) {
    const ApiRouteSpec *s = api_route_spec(r);
    return s && s->mutating;
}

#define PATH_MAX_SEGMENTS 4
#define PATH_MAX_LEN 512

typedef struct Segments {
    const char *seg[PATH_MAX_SEGMENTS];
    size_t len[PATH_MAX_SEGMENTS];
    size_t n;
} Segments;

/* Splits into at most PATH_MAX_SEGMENTS non-empty segments; false for
 * "//", a path too deep or too long. */
static bool split(const char *path, size_t len, Segments *ret) {
    ret->n = 0;
    for (size_t i = 1; i <= len;) {
        size_t j = i;
        while (j < len && path[j] != '/')
            j++;
        if (j == i || ret->n >= PATH_MAX_SEGMENTS)
            return false;
        ret->seg[ret->n] = path + i;
        ret->len[ret->n] = j - i;
        ret->n++;
        i = j + 1;
    }
    return true;
}

/* Does the table path (with its {x}) match? *ret_param: the parameter's
 * segment index, or SIZE_MAX. */
static bool path_matches(const char *pattern, const Segments *s, size_t *ret_param) {
    Segments p;
    if (!split(pattern, strlen(pattern), &p) || p.n != s->n)
        return false;
    *ret_param = SIZE_MAX;
    for (size_t k = 0; k < s->n; k++) {
        if (p.seg[k][0] == '{') {
            *ret_param = k;
            continue;
        }
        if (p.len[k] != s->len[k] || memcmp(p.seg[k], s->seg[k], s->len[k]) != 0)
            return false;
    }
    return true;
}

static void add_allow(char *allow, size_t size, const char *method) {
    size_t n = strlen(allow);
    if (strstr(allow, method))
        return;
    snprintf(allow + n, size - n, "%s%s", n ? ", " : "", method);
    if (streq(method, "GET"))
        add_allow(allow, size, "HEAD");
}

int api_route_parse(const char *method, const char *path, ApiRoute *ret, ApiError *err) {
    if (!method || !path || path[0] != '/' || !ret)
        return api_fail(err, -ENOENT, API_CODE_NOT_FOUND, "No such route");
    *ret = (ApiRoute) {};

    size_t len = strcspn(path, "?#");
    if (len > PATH_MAX_LEN)
        return api_fail(err, -ENOENT, API_CODE_NOT_FOUND, "No such route");
    /* One trailing slash is tolerated ("/v1/status/"), the root is not a route. */
    if (len > 1 && path[len - 1] == '/')
        len--;
    Segments s;
    if (!split(path, len, &s))
        return api_fail(err, -ENOENT, API_CODE_NOT_FOUND, "No such route");

    /* HEAD is GET without the body; MHD drops the body for us. */
    const char *m = streq(method, "HEAD") ? "GET" : method;
    const ApiRouteSpec *found = NULL;
    size_t param = SIZE_MAX;
    bool path_known = false;
    for (size_t i = 0; i < _API_ROUTE_MAX; i++) {
        const ApiRouteSpec *r = &api_routes[i];
        size_t p;
        if (!path_matches(r->path, &s, &p))
            continue;
        path_known = true;
        add_allow(ret->allow, sizeof ret->allow, r->method);
        if (!found && streq(r->method, m)) {
            found = r;
            param = p;
        }
    }
    if (!path_known)
        return api_fail(err, -ENOENT, API_CODE_NOT_FOUND, "No such route");
    if (!found)
        return api_fail(err, -EOPNOTSUPP, API_CODE_METHOD_NOT_ALLOWED,
                        "Method %.16s not allowed here (allowed: %s)", method, ret->allow);

    ret->id = found->id;
    if (param != SIZE_MAX) {
        size_t max = found->param == API_PARAM_VOLUME ? LAYOUT_NAME_MAX : API_ID_MAX;
        const char *what = found->param == API_PARAM_VOLUME      ? "volume name"
                           : found->param == API_PARAM_OPERATION ? "operation id"
                                                                 : "workspace id";
        if (s.len[param] > max)
            return api_fail(err, -EINVAL, API_CODE_BAD_REQUEST, "Invalid %s: longer than %zu characters",
                            what, max);
        memcpy(ret->param, s.seg[param], s.len[param]);
        ret->param[s.len[param]] = 0;
        if (!layout_name_is_valid(ret->param, max))
            return api_fail(err, -EINVAL, API_CODE_BAD_REQUEST, "Invalid %s: use [a-z0-9][a-z0-9-]*", what);
    }
    return 0;
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

static const struct {
    const char *name;
    ApiQueryKey key;
} query_keys[] = {
    { "wait", API_QUERY_WAIT },
    { "destroy_data", API_QUERY_DESTROY_DATA },
    { "since", API_QUERY_SINCE },
    { "dry_run", API_QUERY_DRY_RUN },
    { "stop_workspaces", API_QUERY_STOP_WORKSPACES },
    { "queue", API_QUERY_QUEUE },
    { "tenant", API_QUERY_TENANT },
};

/* The names a route takes, for the error message. */
static void known_keys(const ApiRouteSpec *route, char *buf, size_t size) {
    buf[0] = 0;
    for (size_t i = 0; i < ELEMENTSOF(query_keys); i++)
        if (route->query & query_keys[i].key) {
            size_t n = strlen(buf);
            snprintf(buf + n, size - n, "%s%s", n ? ", " : "", query_keys[i].name);
        }
    if (!buf[0])
        snprintf(buf, size, "none");
}

static int query_value(ApiQueryKey k, const char *key, const char *value, ApiQuery *q, ApiError *err) {
    switch (k) {
    case API_QUERY_WAIT: {
        char *end = NULL;
        errno = 0;
        double sec = value && *value ? strtod(value, &end) : NAN;
        if (q->has_wait || !value || !*value || errno || *end || !isfinite(sec) || sec < 0 || sec > API_WAIT_MAX_SEC)
            return api_fail(err, -EINVAL, API_CODE_BAD_REQUEST,
                            "wait must be given once, as seconds from 0 to %u", API_WAIT_MAX_SEC);
        q->has_wait = true;
        q->wait = (usec_t) (sec * USEC_PER_SEC);
        return 0;
    }
    case API_QUERY_SINCE: {
        char *end = NULL;
        errno = 0;
        unsigned long long v = value && *value >= '0' && *value <= '9' ? strtoull(value, &end, 10) : 0;
        if (q->has_since || !value || !*value || *value < '0' || *value > '9' || errno || *end)
            return api_fail(err, -EINVAL, API_CODE_BAD_REQUEST,
                            "since must be given once, as an event sequence number");
        q->has_since = true;
        q->since = v;
        return 0;
    }
    case API_QUERY_TENANT:
        if (!value || !layout_name_is_valid(value, LAYOUT_NAME_MAX))
            return api_fail(err, -EINVAL, API_CODE_BAD_REQUEST,
                            "tenant must be a name of [a-z0-9][a-z0-9-]*, at most %d characters", LAYOUT_NAME_MAX);
        snprintf(q->tenant, sizeof q->tenant, "%s", value);
        return 0;
    case API_QUERY_DESTROY_DATA:
    case API_QUERY_DRY_RUN:
    case API_QUERY_QUEUE:
    case API_QUERY_STOP_WORKSPACES: {
        bool b;
        /* "?destroy_data" alone is ambiguous: refused rather than guessed. */
        if (!value || api_parse_bool(value, &b) < 0)
            return api_fail(err, -EINVAL, API_CODE_BAD_REQUEST, "%s must be true or false", key);
        if (k == API_QUERY_DESTROY_DATA)
            q->destroy_data = b;
        else if (k == API_QUERY_DRY_RUN)
            q->dry_run = b;
        else if (k == API_QUERY_QUEUE)
            q->queue = b;
        else {
            q->has_stop_workspaces = true;
            q->stop_workspaces = b;
        }
        return 0;
    }
    }
    return -EINVAL;
}

int api_query_parse(const ApiRouteSpec *route, const char *key, const char *value, ApiQuery *q, ApiError *err) {
    ApiQueryKey k = 0;
    char known[64];
    for (size_t i = 0; key && i < ELEMENTSOF(query_keys); i++)
        if (streq(key, query_keys[i].name))
            k = query_keys[i].key;
    if (!k || !(route->query & k)) {
        known_keys(route, known, sizeof known);
        return api_fail(err, -EINVAL, API_CODE_BAD_REQUEST, "Unknown query parameter \"%.32s\" for %s %s (known: %s)",
                        key ?: "", route->method, route->path, known);
    }
    /* Given twice is refused, whatever the values: for destroy_data the
     * last one winning would make "=false&...=true" destroy data. */
    if (q->seen & k)
        return api_fail(err, -EINVAL, API_CODE_BAD_REQUEST, "Query parameter \"%s\" given more than once", key);
    int r = query_value(k, key, value, q, err);
    if (r == 0)
        q->seen |= k;
    return r;
}
