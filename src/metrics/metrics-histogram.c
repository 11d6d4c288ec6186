/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A fixed-bucket histogram, written with metrics_writer_histogram(). */

#include <math.h>

#include "metrics.h"

int metrics_histogram_init(MetricsHistogram *h, const double *bounds, size_t n) {
    if (!h || n > METRICS_HISTOGRAM_MAX_BUCKETS || (n > 0 && !bounds))
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(bounds[i]) || (i > 0 && bounds[i] <= bounds[i - 1]))
            return -EINVAL;
    *h = (MetricsHistogram) { .n = n };
    memcpy(h->bounds, bounds, n * sizeof(double));
    return 0;
}

void metrics_histogram_observe(MetricsHistogram *h, double v) {
    if (isnan(v))
        return;
    h->count++;
    h->sum += v;
    /* Few buckets: a linear scan beats a binary search here. */
    for (size_t i = 0; i < h->n; i++)
        if (v <= h->bounds[i]) {
            h->counts[i]++;
            return;
        }
    h->overflow++;
}

int metrics_histogram_write(const MetricsHistogram *h, MetricsWriter *w, const char *const *labels) {
    return metrics_writer_histogram(w, labels, h->bounds, h->counts, h->n, h->overflow, h->sum);
}
