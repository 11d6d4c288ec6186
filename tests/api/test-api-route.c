/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests: routing, the error model, request bodies. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "api.h"
#include "api-internal.h"

static int route(const char *method, const char *path, ApiRoute *r, ApiError *err, const char **allow) {
    *err = (ApiError) {};
    int k = api_route_parse(method, path, r, err);
    if (allow)
        *allow = r->allow;
    return k;
}

static void test_routes_ok(void **state) {
    static const struct {
        const char *method, *path;
        ApiRouteId id;
        const char *param;
    } cases[] = {
        { "GET", "/v1/status", API_ROUTE_STATUS, "" },
        { "HEAD", "/v1/status", API_ROUTE_STATUS, "" },
        { "GET", "/v1/status/", API_ROUTE_STATUS, "" },
        { "GET", "/v1/status?pretty=1", API_ROUTE_STATUS, "" },
        { "GET", "/v1/volumes", API_ROUTE_VOLUMES, "" },
        { "GET", "/v1/volumes/state-0", API_ROUTE_VOLUME, "state-0" },
        { "GET", "/v1/workspaces", API_ROUTE_WORKSPACES, "" },
        { "POST", "/v1/workspaces", API_ROUTE_WORKSPACE_CREATE, "" },
        { "GET", "/v1/workspaces/ws-1", API_ROUTE_WORKSPACE, "ws-1" },
        { "DELETE", "/v1/workspaces/ws-1?destroy_data=true", API_ROUTE_WORKSPACE_DELETE, "ws-1" },
        { "POST", "/v1/workspaces/ws-1/restart", API_ROUTE_WORKSPACE_RESTART, "ws-1" },
        { "POST", "/v1/reload", API_ROUTE_RELOAD, "" },
        { "GET", "/v1/capacity", API_ROUTE_CAPACITY, "" },
        { "GET", "/metrics", API_ROUTE_METRICS, "" },
    };
    for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
        ApiRoute r;
        ApiError err;
        assert_int_equal(route(cases[i].method, cases[i].path, &r, &err, NULL), 0);
        assert_int_equal(r.id, cases[i].id);
        assert_string_equal(r.param, cases[i].param);
    }
}

static void test_routes_not_found(void **state) {
    static const char *const paths[] = {
        "/", "", "v1/status", "/v1", "/v2/status", "/v1/statusx", "/v1//status", "//v1/status",
        "/v1/volumes/a/b", "/v1/workspaces/a/stop", "/v1/workspaces/a/restart/x", "/metrics/x",
        "/V1/status", "/v1/status//",
    };
    for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
        ApiRoute r;
        ApiError err;
        assert_int_equal(route("GET", paths[i], &r, &err, NULL), -ENOENT);
        assert_int_equal(err.status, 404);
        assert_string_equal(err.code, "not_found");
    }
    ApiRoute r;
    ApiError err;
    assert_int_equal(api_route_parse(NULL, "/v1/status", &r, &err), -ENOENT);
    assert_int_equal(api_route_parse("GET", NULL, &r, &err), -ENOENT);
}

static void test_routes_method(void **state) {
    ApiRoute r;
    ApiError err;
    const char *allow = NULL;
    assert_int_equal(route("POST", "/v1/status", &r, &err, &allow), -EOPNOTSUPP);
    assert_int_equal(err.status, 405);
    assert_string_equal(allow, "GET, HEAD");
    assert_int_equal(route("PUT", "/v1/workspaces", &r, &err, &allow), -EOPNOTSUPP);
    assert_string_equal(allow, "GET, HEAD, POST");
    assert_int_equal(route("GET", "/v1/reload", &r, &err, &allow), -EOPNOTSUPP);
    assert_string_equal(allow, "POST");
    assert_int_equal(route("DELETE", "/v1/workspaces", &r, &err, &allow), -EOPNOTSUPP);
    assert_int_equal(route("get", "/v1/status", &r, &err, &allow), -EOPNOTSUPP); /* methods are case-sensitive */
}

static void test_routes_bad_param(void **state) {
    ApiRoute r;
    ApiError err;
    assert_int_equal(route("GET", "/v1/workspaces/Bad", &r, &err, NULL), -EINVAL);
    assert_int_equal(err.status, 400);
    assert_int_equal(route("GET", "/v1/workspaces/-x", &r, &err, NULL), -EINVAL);
    assert_int_equal(route("GET", "/v1/workspaces/a%2fb", &r, &err, NULL), -EINVAL);
    assert_int_equal(route("GET", "/v1/workspaces/..", &r, &err, NULL), -EINVAL);
    char longid[200];
    memset(longid, 'a', sizeof(longid));
    strcpy(longid, "/v1/workspaces/");
    memset(longid + 15, 'a', 65);
    longid[80] = 0;
    assert_int_equal(route("GET", longid, &r, &err, NULL), -EINVAL); /* 65 chars */
    longid[79] = 0;
    assert_int_equal(route("GET", longid, &r, &err, NULL), 0); /* 64 chars */
    assert_int_equal(strlen(r.param), 64);
    /* volume names: at most LAYOUT_NAME_MAX */
    assert_int_equal(route("GET", "/v1/volumes/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", &r, &err, NULL), -EINVAL);
}

static void test_route_strings(void **state) {
    for (ApiRouteId i = 0; i < _API_ROUTE_MAX; i++) {
        assert_non_null(api_route_id_to_string(i));
        assert_int_equal(api_route_id_from_string(api_route_id_to_string(i)), i);
    }
    assert_null(api_route_id_to_string(_API_ROUTE_MAX));
    assert_int_equal(api_route_id_from_string("nope"), _API_ROUTE_INVALID);
    assert_true(api_route_id_is_mutating(API_ROUTE_RELOAD));
    assert_true(api_route_id_is_mutating(API_ROUTE_WORKSPACE_DELETE));
    assert_false(api_route_id_is_mutating(API_ROUTE_METRICS));
    for (ApiState s = 0; s < _API_STATE_MAX; s++)
        assert_int_equal(api_state_from_string(api_state_to_string(s)), s);
}

static void test_errors(void **state) {
    ApiError e = {};
    api_error_from_errno(&e, -ENOSPC);
    assert_int_equal(e.status, 507);
    e = (ApiError) {};
    api_error_from_errno(&e, -EEXIST);
    assert_int_equal(e.status, 409);
    e = (ApiError) {};
    api_error_from_errno(&e, -EBUSY);
    assert_int_equal(e.status, 409);
    assert_string_equal(e.code, "conflict");
    e = (ApiError) {};
    api_error_from_errno(&e, -EAGAIN);
    assert_int_equal(e.status, 503);
    assert_string_equal(e.code, "unavailable");
    e = (ApiError) {};
    api_error_from_errno(&e, -EROFS);
    assert_int_equal(e.status, 503);
    assert_string_equal(e.code, "volume_unavailable");
    e = (ApiError) {};
    api_error_from_errno(&e, -EOPNOTSUPP);
    assert_int_equal(e.status, 501);
    assert_string_equal(e.code, "not_supported");
    e = (ApiError) {};
    api_error_from_errno_message(&e, -ENOSPC, "state-0 is full");
    assert_int_equal(e.status, 507);
    assert_string_equal(e.code, "pool_full");
    assert_string_equal(e.message, "state-0 is full");
    e = (ApiError) {};
    api_error_from_errno(&e, -EIO);
    assert_int_equal(e.status, 500);
    /* An explicit error wins over the errno mapping. */
    assert_int_equal(api_fail(&e, -ENOSPC, API_CODE_POOL_FULL, "full %d", 3), -ENOSPC);
    api_error_from_errno(&e, -ENOENT);
    assert_int_equal(e.status, 507);
    assert_string_equal(e.message, "full 3");

    json_object *o = NULL;
    assert_int_equal(api_error_to_json(&e, &o), 0);
    json_object *inner, *code;
    assert_true(json_object_object_get_ex(o, "error", &inner));
    assert_true(json_object_object_get_ex(inner, "code", &code));
    assert_string_equal(json_object_get_string(code), "pool_full");
    json_object_put(o);
}

static int parse(const char *s, ApiWorkspaceRequest *r, ApiError *err) {
    *err = (ApiError) {};
    return api_workspace_request_parse(s, strlen(s), r, err);
}

static void test_body_ok(void **state) {
    ApiWorkspaceRequest r;
    ApiError err;
    assert_int_equal(parse("{\"id\":\"ws-9\"}", &r, &err), 0);
    assert_string_equal(r.id, "ws-9");
    assert_null(r.tenant);
    assert_int_equal(r.quota, 0);
    assert_null(r.labels);
    api_workspace_request_done(&r);

    assert_int_equal(parse(" {\"id\":\"a\",\"tenant\":\"acme\",\"quota\":\"10G\",\"labels\":{\"team\":\"red\",\"app.x/y\":\"v v\"}}\n",
                           &r, &err), 0);
    assert_string_equal(r.tenant, "acme");
    assert_int_equal(r.quota, 10 * GIB);
    assert_int_equal(json_object_object_length(r.labels), 2);
    api_workspace_request_done(&r);

    assert_int_equal(parse("{\"id\":\"a\",\"quota\":1048576,\"tenant\":null,\"labels\":null}", &r, &err), 0);
    assert_int_equal(r.quota, MIB);
    api_workspace_request_done(&r);
}

static void test_body_bad(void **state) {
    static const char *const bad_json[] = {
        "", "{", "{\"id\":\"a\"", "{\"id\":\"a\"} x", "{\"id\":'a'}", "{\"id\":\"a\",}", "nul",
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
    };
    for (size_t i = 0; i < ELEMENTSOF(bad_json); i++) {
        ApiWorkspaceRequest r;
        ApiError err;
        assert_int_equal(parse(bad_json[i], &r, &err), -EINVAL);
        assert_int_equal(err.status, 400);
        assert_string_equal(err.code, "invalid_json");
    }
    static const char *const bad_req[] = {
        "[]", "\"x\"", "{}", "{\"id\":5}", "{\"id\":\"A\"}", "{\"id\":\"\"}", "{\"id\":\"a\",\"quota\":-1}",
        "{\"id\":\"a\",\"quota\":\"lots\"}", "{\"id\":\"a\",\"quota\":1.5}", "{\"id\":\"a\",\"labels\":[]}",
        "{\"id\":\"a\",\"labels\":{\"k\":1}}", "{\"id\":\"a\",\"labels\":{\"\":\"v\"}}",
        "{\"id\":\"a\",\"labels\":{\"k=v\":\"v\"}}", "{\"id\":\"a\",\"labels\":{\"k\":\"a\\nb\"}}",
        "{\"id\":\"a\",\"quotas\":1}", "{\"id\":\"a\",\"tenant\":\"Bad Tenant\"}",
    };
    for (size_t i = 0; i < ELEMENTSOF(bad_req); i++) {
        ApiWorkspaceRequest r;
        ApiError err;
        assert_int_equal(parse(bad_req[i], &r, &err), -EINVAL);
        assert_int_equal(err.status, 400);
        assert_string_equal(err.code, "bad_request");
    }
}

/* Input that used to be taken for something else: an embedded NUL
 * ("nul\u0000../../etc" created workspace "nul"), a key given twice
 * ({"id":"a","id":"b"} created "b"), and query parameters a route does
 * not take or that come twice. Each is 400 with a message saying which. */
static void test_refused_input(void **state) {
    static const char *const refused[] = {
        "{\"id\":\"nul\\u0000../../etc\"}",
        "{\"id\":\"a\",\"tenant\":\"t\\u0000x\"}",
        "{\"id\":\"a\",\"labels\":{\"k\":\"v\\u0000w\"}}",
        "{\"id\":\"a\",\"labels\":{\"k\\u0000\":\"v\"}}",
        "{\"id\":\"a\",\"id\":\"b\"}",
        "{\"id\":\"a\",\"labels\":{\"k\":\"1\",\"k\":\"2\"}}",
    };
    for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
        ApiWorkspaceRequest r;
        ApiError err;
        if (parse(refused[i], &r, &err) != -EINVAL)
            fail_msg("accepted: %s", refused[i]);
        assert_int_equal(err.status, 400);
        assert_true(strstr(err.message, "NUL") || strstr(err.message, "twice") || strstr(err.message, "duplicate") ||
                    strstr(err.message, "more than once"));
    }
    ApiQuery q = {};
    ApiError err = {};
    const ApiRouteSpec *status = api_route_spec(API_ROUTE_STATUS), *del = api_route_spec(API_ROUTE_WORKSPACE_DELETE);
    assert_int_equal(api_query_parse(status, "pretty", "1", &q, &err), -EINVAL);
    assert_int_equal(err.status, 400);
    assert_non_null(strstr(err.message, "Unknown query parameter \"pretty\""));
    memset(&q, 0, sizeof q);
    assert_int_equal(api_query_parse(del, "wait", "5", &q, &err), 0);
    assert_int_equal(api_query_parse(del, "wait", "5", &q, &err), -EINVAL); /* twice */
    assert_int_equal(api_query_parse(del, "destroy_data", NULL, &q, &err), -EINVAL); /* no value: not guessed */
    assert_int_equal(api_query_parse(del, "destroy_data", "true", &q, &err), 0);
    assert_true(q.destroy_data);
    /* A bool given twice is refused too, whatever its values: the last one
     * winning would let "=false&destroy_data=true" destroy data. */
    assert_int_equal(api_query_parse(del, "destroy_data", "false", &q, &err), -EINVAL);
    assert_non_null(strstr(err.message, "more than once"));
    memset(&q, 0, sizeof q);
    assert_int_equal(api_query_parse(del, "destroy_data", "false", &q, &err), 0);
    assert_int_equal(api_query_parse(del, "destroy_data", "true", &q, &err), -EINVAL);
    assert_false(q.destroy_data);
    const ApiRouteSpec *sd = api_route_spec(API_ROUTE_SHUTDOWN);
    memset(&q, 0, sizeof q);
    assert_int_equal(api_query_parse(sd, "stop_workspaces", "true", &q, &err), 0);
    assert_true(q.has_stop_workspaces && q.stop_workspaces);
    assert_int_equal(api_query_parse(sd, "stop_workspaces", "maybe", &q, &err), -EINVAL);
    assert_int_equal(api_query_parse(sd, "stop_workspaces", "false", &q, &err), -EINVAL);
    assert_true(q.stop_workspaces);
}

static void test_bool_and_peer(void **state) {
    bool b;
    assert_int_equal(api_parse_bool(NULL, &b), 0);
    assert_false(b);
    assert_int_equal(api_parse_bool("true", &b), 0);
    assert_true(b);
    assert_int_equal(api_parse_bool("0", &b), 0);
    assert_false(b);
    assert_int_equal(api_parse_bool("", &b), -EINVAL);
    assert_int_equal(api_parse_bool("maybe", &b), -EINVAL);

    gid_t sup[] = { 10, 20 };
    assert_true(api_peer_may(1000, 1000, NULL, 0, 900, false));  /* reads: anyone connected */
    assert_false(api_peer_may(1000, 1000, NULL, 0, 900, true));
    assert_true(api_peer_may(0, 0, NULL, 0, GID_INVALID, true)); /* root always */
    assert_true(api_peer_may(1000, 900, NULL, 0, 900, true));    /* primary group */
    assert_true(api_peer_may(1000, 1000, sup, 2, 20, true));     /* supplementary group */
    assert_false(api_peer_may(1000, 1000, sup, 2, 30, true));
    assert_false(api_peer_may(1000, 1000, sup, 2, GID_INVALID, true)); /* no group: root only */
}

/* The rendered-answer cache: per route and parameter, fresh for
 * API_CACHE_TTL, dropped whole by a change. */
static void test_cache(void **state) {
    (void) state;
    ApiCache c = {};
    usec_t t = 1000 * USEC_PER_SEC;
    size_t len;
    unsigned status;
    assert_null(api_cache_get(&c, API_ROUTE_VOLUMES, NULL, t));
    assert_int_equal(api_cache_put(&c, API_ROUTE_VOLUMES, NULL, 200, "{\"a\":1}\n", 8, t), 0);
    assert_int_equal(api_cache_put(&c, API_ROUTE_WORKSPACE, "ws-1", 200, "{}\n", 3, t), 0);
    const ApiCacheEntry *e = api_cache_get(&c, API_ROUTE_VOLUMES, "", t + 1);
    assert_non_null(e);
    assert_string_equal(api_cache_entry_body(e, &len, &status), "{\"a\":1}\n");
    assert_int_equal(len, 8);
    assert_int_equal(status, 200);
    assert_null(api_cache_get(&c, API_ROUTE_WORKSPACE, "ws-2", t)); /* another parameter */
    assert_non_null(api_cache_get(&c, API_ROUTE_WORKSPACE, "ws-1", t));
    assert_null(api_cache_get(&c, API_ROUTE_VOLUMES, NULL, t + API_CACHE_TTL)); /* too old */
    /* put again: replaced in place, fresh again */
    assert_int_equal(api_cache_put(&c, API_ROUTE_VOLUMES, NULL, 200, "[]\n", 3, t + API_CACHE_TTL), 0);
    assert_string_equal(api_cache_entry_body(api_cache_get(&c, API_ROUTE_VOLUMES, NULL, t + API_CACHE_TTL), NULL,
                                             NULL), "[]\n");
    api_cache_clear(&c);
    assert_null(api_cache_get(&c, API_ROUTE_WORKSPACE, "ws-1", t));
    /* more entries than it keeps: dropped whole, never past its bound */
    for (int i = 0; i < 600; i++) {
        char id[16];
        snprintf(id, sizeof id, "ws-%d", i);
        assert_int_equal(api_cache_put(&c, API_ROUTE_WORKSPACE, id, 200, "{}", 2, t), 0);
    }
    assert_non_null(api_cache_get(&c, API_ROUTE_WORKSPACE, "ws-599", t));
    assert_null(api_cache_get(&c, API_ROUTE_WORKSPACE, "ws-0", t));
    api_cache_done(&c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routes_ok),
        cmocka_unit_test(test_routes_not_found),
        cmocka_unit_test(test_routes_method),
        cmocka_unit_test(test_routes_bad_param),
        cmocka_unit_test(test_route_strings),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_body_ok),
        cmocka_unit_test(test_body_bad),
        cmocka_unit_test(test_refused_input),
        cmocka_unit_test(test_bool_and_peer),
        cmocka_unit_test(test_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
