/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the API's pure functions: routing (method + path),
 * the POST /v1/workspaces body parser, the error model, and the metrics
 * writer's escaping. Input: "METHOD PATH\n" then the body.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "metrics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *nl = memchr(data, '\n', size);
    size_t line_len = nl ? (size_t) (nl - (const char *) data) : size;
    if (line_len > 4096)
        return 0;
    char line[4097];
    memcpy(line, data, line_len);
    line[line_len] = 0;

    char *sp = strchr(line, ' ');
    const char *method = line, *path = "";
    if (sp) {
        *sp = 0;
        path = sp + 1;
    }
    ApiRoute r;
    ApiError err = {};
    int rr = api_route_parse(method, path, &r, &err);
    if (rr == 0) {
        /* Invariants: a routed parameter is a valid name. */
        if (r.param[0] && !layout_name_is_valid(r.param, API_ID_MAX))
            __builtin_trap();
        if (!api_route_id_to_string(r.id))
            __builtin_trap();
        /* The query: each "k=v" after '?' against the route's table row;
         * a refusal is always a 400 with a message. */
        const char *q = strchr(path, '?');
        ApiQuery query = {};
        char arg[256];
        while (q && *q) {
            q++;
            size_t n = strcspn(q, "&");
            snprintf(arg, sizeof arg, "%.*s", (int) MIN(n, sizeof arg - 1), q);
            char *eq = strchr(arg, '=');
            if (eq)
                *eq++ = 0;
            ApiError qe = {};
            if (api_query_parse(api_route_spec(r.id), arg, eq, &query, &qe) < 0 && (qe.status != 400 || !qe.message[0]))
                __builtin_trap();
            q += n;
        }
        if (query.has_wait && query.wait > API_WAIT_MAX_SEC * USEC_PER_SEC)
            __builtin_trap();
    } else if (err.status != 404 && err.status != 405 && err.status != 400)
        __builtin_trap();
    else if (err.status == 405 && !r.allow[0])
        __builtin_trap();

    const char *body = nl ? nl + 1 : "";
    size_t body_len = nl ? size - line_len - 1 : 0;
    ApiWorkspaceRequest req = {};
    err = (ApiError) {};
    if (api_workspace_request_parse(body, body_len, &req, &err) == 0) {
        if (!req.id || !layout_name_is_valid(req.id, API_ID_MAX))
            __builtin_trap();
        /* The accepted labels must render as metric labels without error. */
        MetricsWriter *w = NULL;
        if (metrics_writer_new(&w) == 0) {
            (void) metrics_writer_family(w, "fuzz_labels", METRIC_GAUGE, path);
            if (req.labels) {
                json_object_object_foreach(req.labels, k, v) {
                    const char *labels[] = { "key", k, "value", json_object_get_string(v), NULL };
                    if (metrics_writer_sample(w, labels, (double) req.quota) < 0)
                        __builtin_trap();
                }
            }
            char *text = NULL;
            if (metrics_writer_steal(w, &text, NULL) == 0)
                free(text);
            metrics_writer_free(w);
        }
        api_workspace_request_done(&req);
    } else {
        if (err.status != 400)
            __builtin_trap();
        json_object *o = NULL;
        if (api_error_to_json(&err, &o) == 0)
            json_object_put(o);
    }
    bool b;
    (void) api_parse_bool(path, &b);
    return 0;
}
