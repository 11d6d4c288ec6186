/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The layoutd_api_* metric families: the API's own counters (api-internal.h). */
#include <stdio.h>

#include "api-internal.h"
#include "util.h"

int api_write_own_metrics(Api *api, MetricsWriter *w) {
    int r;
    char code[8];

    r = metrics_writer_family(w, "layoutd_api_requests_total", METRIC_COUNTER,
                              "API requests answered, by route and HTTP status.");
    if (r < 0)
        return r;
    for (size_t ri = 0; ri <= _API_ROUTE_MAX; ri++)
        for (unsigned st = API_STATUS_MIN; st <= API_STATUS_MAX; st++) {
            uint64_t n = api->requests[ri][st - API_STATUS_MIN];
            if (n == 0)
                continue;
            snprintf(code, sizeof(code), "%u", st);
            const char *labels[] = { "route", ri == 0 ? "none" : api_route_id_to_string(ri - 1), "code", code, NULL };
            r = metrics_writer_sample(w, labels, (double) n);
            if (r < 0)
                return r;
        }

    r = metrics_writer_family(w, "layoutd_api_request_duration_seconds", METRIC_HISTOGRAM,
                              "Time from a request's headers to its completion, by route.");
    if (r < 0)
        return r;
    for (ApiRouteId ri = 0; ri < _API_ROUTE_MAX; ri++) {
        if (api->latency[ri].count == 0)
            continue;
        const char *labels[] = { "route", api_route_id_to_string(ri), NULL };
        r = metrics_histogram_write(&api->latency[ri], w, labels);
        if (r < 0)
            return r;
    }

    struct {
        const char *name;
        MetricType type;
        const char *help;
        double value;
    } simple[] = {
        { "layoutd_api_connections_open", METRIC_GAUGE, "API connections open now.", api->n_conns },
        { "layoutd_api_connection_limit", METRIC_GAUGE, "Most API connections served at once.",
          api->config.connection_limit },
        { "layoutd_api_connections_total", METRIC_COUNTER, "API connections accepted.",
          (double) api->connections_total },
        { "layoutd_api_request_timeouts_total", METRIC_COUNTER,
          "API connections closed for not finishing a request in time.", (double) api->request_timeouts_total },
    };
    for (size_t i = 0; i < ELEMENTSOF(simple); i++) {
        r = metrics_writer_family(w, simple[i].name, simple[i].type, simple[i].help);
        if (r < 0)
            return r;
        r = metrics_writer_sample(w, NULL, simple[i].value);
        if (r < 0)
            return r;
    }
    return 0;
}
