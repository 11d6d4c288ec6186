/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the Prometheus text writer. With an argument ("emit") it
 * prints a tricky exposition instead, which test-metrics-parse.sh feeds to
 * the real parser (python3-prometheus-client).
 */

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "metrics.h"

static char *steal(MetricsWriter *w) {
    char *s = NULL;
    assert_int_equal(metrics_writer_steal(w, &s, NULL), 0);
    return s;
}

static void test_counter_gauge(void **state) {
    _cleanup_(metrics_writer_freep) MetricsWriter *w = NULL;
    assert_int_equal(metrics_writer_new(&w), 0);
    assert_int_equal(metrics_writer_family(w, "x_total", METRIC_COUNTER, "Things.\nMore \\ things."), 0);
    assert_int_equal(metrics_writer_sample(w, (const char *[]) { "a", "q\"u\\o\nte", "b", "", NULL }, 3), 0);
    assert_int_equal(metrics_writer_family(w, "g_bytes", METRIC_GAUGE, "Bytes."), 0);
    assert_int_equal(metrics_writer_sample(w, NULL, 0.1), 0);
    assert_int_equal(metrics_writer_sample(w, NULL, 1e20), 0);
    assert_int_equal(metrics_writer_sample(w, NULL, NAN), 0);
    assert_int_equal(metrics_writer_sample(w, NULL, -INFINITY), 0);
    _cleanup_free_ char *s = steal(w);
    assert_string_equal(s,
        "# HELP x_total Things.\\nMore \\\\ things.\n"
        "# TYPE x_total counter\n"
        "x_total{a=\"q\\\"u\\\\o\\nte\",b=\"\"} 3\n"
        "# HELP g_bytes Bytes.\n"
        "# TYPE g_bytes gauge\n"
        "g_bytes 0.1\n"
        "g_bytes 1e+20\n"
        "g_bytes NaN\n"
        "g_bytes -Inf\n");
}

static void test_histogram(void **state) {
    _cleanup_(metrics_writer_freep) MetricsWriter *w = NULL;
    MetricsHistogram h;
    static const double b[] = { 0.5, 1, 2.5 };
    assert_int_equal(metrics_writer_new(&w), 0);
    assert_int_equal(metrics_histogram_init(&h, b, 3), 0);
    metrics_histogram_observe(&h, 0.1);
    metrics_histogram_observe(&h, 0.5);
    metrics_histogram_observe(&h, 2);
    metrics_histogram_observe(&h, 9);
    metrics_histogram_observe(&h, NAN); /* ignored */
    assert_int_equal(h.count, 4);
    assert_int_equal(metrics_writer_family(w, "lat_seconds", METRIC_HISTOGRAM, "Latency."), 0);
    assert_int_equal(metrics_writer_sample(w, NULL, 1), -EINVAL); /* plain sample in a histogram */
    assert_int_equal(metrics_histogram_write(&h, w, (const char *[]) { "le", "x", NULL }), -EINVAL);
    assert_int_equal(metrics_histogram_write(&h, w, (const char *[]) { "route", "r", NULL }), 0);
    _cleanup_free_ char *s = steal(w);
    assert_string_equal(s,
        "# HELP lat_seconds Latency.\n"
        "# TYPE lat_seconds histogram\n"
        "lat_seconds_bucket{route=\"r\",le=\"0.5\"} 2\n"
        "lat_seconds_bucket{route=\"r\",le=\"1\"} 2\n"
        "lat_seconds_bucket{route=\"r\",le=\"2.5\"} 3\n"
        "lat_seconds_bucket{route=\"r\",le=\"+Inf\"} 4\n"
        "lat_seconds_sum{route=\"r\"} 11.6\n"
        "lat_seconds_count{route=\"r\"} 4\n");
}

static void test_invalid(void **state) {
    _cleanup_(metrics_writer_freep) MetricsWriter *w = NULL;
    assert_int_equal(metrics_writer_new(&w), 0);
    assert_int_equal(metrics_writer_sample(w, NULL, 1), -EINVAL); /* no family */
    assert_int_equal(metrics_writer_family(w, "1abc", METRIC_GAUGE, ""), -EINVAL);
    assert_int_equal(metrics_writer_family(w, "a-b", METRIC_GAUGE, ""), -EINVAL);
    assert_int_equal(metrics_writer_family(w, "", METRIC_GAUGE, ""), -EINVAL);
    assert_int_equal(metrics_writer_family(w, "requests", METRIC_COUNTER, ""), -EINVAL); /* no _total */
    assert_int_equal(metrics_writer_family(w, "ok:name_total", METRIC_COUNTER, ""), 0);
    assert_int_equal(metrics_writer_family(w, "ok:name_total", METRIC_GAUGE, ""), -EEXIST);
    assert_int_equal(metrics_writer_sample(w, NULL, -1), -EINVAL); /* counters do not go down */
    assert_int_equal(metrics_writer_sample(w, (const char *[]) { "__x", "v", NULL }, 1), -EINVAL);
    assert_int_equal(metrics_writer_sample(w, (const char *[]) { "a", NULL }, 1), -EINVAL);
    assert_int_equal(metrics_writer_sample(w, (const char *[]) { "a", "1", "a", "2", NULL }, 1), -EINVAL);
    assert_int_equal(metrics_writer_sample(w, (const char *[]) { "a:b", "1", NULL }, 1), -EINVAL);
    assert_int_equal(metrics_writer_family(w, "ok:name", METRIC_GAUGE, ""), -EEXIST); /* same family to parsers */
    assert_int_equal(metrics_writer_family(w, "g", METRIC_GAUGE, ""), 0);
    assert_int_equal(metrics_writer_family(w, "g_total", METRIC_COUNTER, ""), -EEXIST);
    assert_int_equal(metrics_writer_family(w, "ok:name_total", METRIC_COUNTER, ""), -EEXIST);
    assert_int_equal(metrics_writer_family(w, "h", METRIC_HISTOGRAM, ""), 0);
    static const double bad[] = { 1, 1 };
    static const uint64_t counts[] = { 0, 0 };
    assert_int_equal(metrics_writer_histogram(w, NULL, bad, counts, 2, 0, 0), -EINVAL);
    MetricsHistogram h;
    assert_int_equal(metrics_histogram_init(&h, bad, 2), -EINVAL);
    assert_int_equal(metric_type_from_string("gauge"), METRIC_GAUGE);
    assert_int_equal(metric_type_from_string("summary"), _METRIC_TYPE_INVALID);
    assert_true(metrics_name_is_valid("a:b_c9"));
    assert_false(metrics_label_name_is_valid("9a"));
}

/* A tricky exposition for the real parser (test-metrics-parse.sh). */
static int emit(void) {
    MetricsWriter *w = NULL;
    MetricsHistogram h;
    static const double b[] = { 0.001, 0.01, 0.1, 1 };
    if (metrics_writer_new(&w) < 0 || metrics_histogram_init(&h, b, 4) < 0)
        return 1;
    for (int i = 0; i < 100; i++)
        metrics_histogram_observe(&h, i / 1000.0);
    int r = metrics_writer_family(w, "layoutd_test_events_total", METRIC_COUNTER, "Events with \\ and\nnewline in help.");
    if (r >= 0)
        r = metrics_writer_sample(w, (const char *[]) { "path", "C:\\dir\\\"quoted\"\nline2", "kind", "ünïcödé", NULL }, 42);
    if (r >= 0)
        r = metrics_writer_sample(w, (const char *[]) { "path", "", "kind", "empty", NULL }, 0);
    if (r >= 0)
        r = metrics_writer_family(w, "layoutd_test_size_bytes", METRIC_GAUGE, "A size.");
    if (r >= 0)
        r = metrics_writer_sample(w, NULL, 17179869184.0);
    if (r >= 0)
        r = metrics_writer_family(w, "layoutd_test_ratio", METRIC_GAUGE, "Special values.");
    if (r >= 0)
        r = metrics_writer_sample(w, (const char *[]) { "v", "nan", NULL }, NAN);
    if (r >= 0)
        r = metrics_writer_sample(w, (const char *[]) { "v", "inf", NULL }, INFINITY);
    if (r >= 0)
        r = metrics_writer_sample(w, (const char *[]) { "v", "small", NULL }, 1.5e-7);
    if (r >= 0)
        r = metrics_writer_family(w, "layoutd_test_latency_seconds", METRIC_HISTOGRAM, "Latency.");
    if (r >= 0)
        r = metrics_histogram_write(&h, w, (const char *[]) { "route", "status", NULL });
    char *s = NULL;
    if (r >= 0)
        r = metrics_writer_steal(w, &s, NULL);
    metrics_writer_free(w);
    if (r < 0)
        return 1;
    fputs(s, stdout);
    free(s);
    return 0;
}

int main(int argc, char *argv[]) {
    if (argc > 1 && streq(argv[1], "emit"))
        return emit();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counter_gauge),
        cmocka_unit_test(test_histogram),
        cmocka_unit_test(test_invalid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
