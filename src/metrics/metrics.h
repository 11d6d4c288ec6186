/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A small writer for the Prometheus text exposition format, version 0.0.4
 * (what GET /metrics serves, Content-Type "text/plain; version=0.0.4").
 *
 * Output is grouped by family: metrics_writer_family() writes the HELP and
 * TYPE lines once, then the samples of that family follow. A family name
 * may appear only once per exposition (the format forbids repeating it).
 * Names must be in base units and say so (`_bytes`, `_seconds`); counters
 * end in `_total`. Label values are escaped (\\, \", \n); HELP text is
 * escaped (\\, \n). Pure: no I/O, no logging.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

typedef enum MetricType {
    METRIC_COUNTER,
    METRIC_GAUGE,
    METRIC_HISTOGRAM,
    _METRIC_TYPE_MAX,
    _METRIC_TYPE_INVALID = -EINVAL,
} MetricType;

const char *metric_type_to_string(MetricType t);
MetricType metric_type_from_string(const char *s);

typedef struct MetricsWriter MetricsWriter;

/* Returns 0 or -ENOMEM. */
int metrics_writer_new(MetricsWriter **ret);
/* Accepts NULL; returns NULL. */
MetricsWriter *metrics_writer_free(MetricsWriter *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(MetricsWriter *, metrics_writer_free)

/*
 * Starts a family: writes "# HELP name help" and "# TYPE name type".
 * Returns: -EINVAL (invalid name, or a counter not ending in _total),
 * -EEXIST (family already written), -ENOMEM, 0.
 */
int metrics_writer_family(MetricsWriter *w, const char *name, MetricType type, const char *help);

/*
 * One sample of the current counter or gauge family. `labels` is a
 * NULL-terminated list of name, value pairs (may be NULL for none).
 * Returns: -EINVAL (no family, histogram family, bad label name, odd list,
 * negative or NaN counter), -ENOMEM, 0.
 */
int metrics_writer_sample(MetricsWriter *w, const char *const *labels, double value);

/*
 * One histogram of the current histogram family: `n` finite upper bounds
 * in increasing order with their NON-cumulative bucket counts (counts[i]
 * counts observations in (bounds[i-1], bounds[i]]); `overflow` counts
 * observations above the last bound. Writes name_bucket{le=...} lines
 * (cumulative, with le="+Inf"), name_sum and name_count.
 * Returns: -EINVAL (no/wrong family, bounds not increasing, "le" label
 * given), -ENOMEM, 0.
 */
int metrics_writer_histogram(MetricsWriter *w, const char *const *labels,
                             const double *bounds, const uint64_t *counts, size_t n,
                             uint64_t overflow, double sum);

/*
 * Hands the text over (NUL-terminated, malloc'ed); the writer is empty
 * afterwards. Returns -ENOMEM if any earlier write ran out of memory, 0.
 */
int metrics_writer_steal(MetricsWriter *w, char **ret, size_t *ret_len);

/*
 * The process_* families of the calling process (metrics-process.c):
 * process_cpu_seconds_total, process_resident_memory_bytes,
 * process_virtual_memory_bytes, process_start_time_seconds,
 * process_open_fds, process_max_fds, as Prometheus' client libraries name
 * them. Returns: <0 when /proc/self/stat cannot be read (nothing written), 0.
 */
int metrics_write_process(MetricsWriter *w);

/* True for [a-zA-Z_:][a-zA-Z0-9_:]* (metric names). */
bool metrics_name_is_valid(const char *s);
/* True for [a-zA-Z_][a-zA-Z0-9_]* not starting with "__" (label names). */
bool metrics_label_name_is_valid(const char *s);

/* An in-memory histogram with fixed bounds, for observing latencies. */
#define METRICS_HISTOGRAM_MAX_BUCKETS 32
typedef struct MetricsHistogram {
    double bounds[METRICS_HISTOGRAM_MAX_BUCKETS];
    uint64_t counts[METRICS_HISTOGRAM_MAX_BUCKETS];
    size_t n;
    uint64_t overflow;
    uint64_t count;
    double sum;
} MetricsHistogram;

/* Initialises h with n increasing bounds. Returns -EINVAL or 0. */
int metrics_histogram_init(MetricsHistogram *h, const double *bounds, size_t n);
void metrics_histogram_observe(MetricsHistogram *h, double v);
/* Writes h as one histogram of the current family (metrics_writer_histogram). */
int metrics_histogram_write(const MetricsHistogram *h, MetricsWriter *w, const char *const *labels);
