/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Prometheus text exposition 0.0.4 writer. See metrics.h.
 * Reference: https://prometheus.io/docs/instrumenting/exposition_formats/
 */

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "metrics.h"
#include "string-table.h"
#include "util.h"

struct MetricsWriter {
    char *buf;
    size_t len;
    size_t allocated;
    bool oom;            /* sticky: a failed append poisons the output */
    char *family;        /* current family name */
    MetricType type;
    char **seen;         /* family names already written */
};

static const char *const metric_type_table[_METRIC_TYPE_MAX] = {
    [METRIC_COUNTER] = "counter",
    [METRIC_GAUGE] = "gauge",
    [METRIC_HISTOGRAM] = "histogram",
};

DEFINE_STRING_TABLE_LOOKUP(metric_type, MetricType);

int metrics_writer_new(MetricsWriter **ret) {
    MetricsWriter *w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->type = _METRIC_TYPE_INVALID;
    *ret = w;
    return 0;
}

MetricsWriter *metrics_writer_free(MetricsWriter *w) {
    if (!w)
        return NULL;
    free(w->buf);
    free(w->family);
    strv_free(w->seen);
    free(w);
    return NULL;
}

static bool writer_reserve(MetricsWriter *w, size_t extra) {
    if (w->oom)
        return false;
    if (w->len + extra + 1 <= w->allocated)
        return true;
    size_t n = MAX(w->allocated * 2, w->len + extra + 1);
    n = MAX(n, (size_t) 4096);
    char *p = realloc(w->buf, n);
    if (!p) {
        w->oom = true;
        return false;
    }
    w->buf = p;
    w->allocated = n;
    return true;
}

static void writer_append(MetricsWriter *w, const char *s, size_t n) {
    if (!writer_reserve(w, n))
        return;
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = 0;
}

static void writer_puts(MetricsWriter *w, const char *s) {
    writer_append(w, s, strlen(s));
}

_printf_(2, 3) static void writer_printf(MetricsWriter *w, const char *fmt, ...) {
    char small[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0) {
        w->oom = true;
        return;
    }
    if ((size_t) n < sizeof(small)) {
        writer_append(w, small, (size_t) n);
        return;
    }
    if (!writer_reserve(w, (size_t) n))
        return;
    va_start(ap, fmt);
    vsnprintf(w->buf + w->len, (size_t) n + 1, fmt, ap);
    va_end(ap);
    w->len += (size_t) n;
}

/* Escapes for label values (\\, \", \n) or, with quote == false, for HELP
 * text (\\, \n), as the 0.0.4 format defines. */
static void writer_escaped(MetricsWriter *w, const char *s, bool quote) {
    for (; *s; s++) {
        if (*s == '\\')
            writer_puts(w, "\\\\");
        else if (*s == '\n')
            writer_puts(w, "\\n");
        else if (quote && *s == '"')
            writer_puts(w, "\\\"");
        else
            writer_append(w, s, 1);
    }
}

/* Shortest text that reads back as the same double; the special values
 * are spelled as the format wants them. */
static void writer_value(MetricsWriter *w, double v) {
    if (isnan(v)) {
        writer_puts(w, "NaN");
        return;
    }
    if (isinf(v)) {
        writer_puts(w, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    char b[64];
    snprintf(b, sizeof(b), "%.15g", v);
    if (strtod(b, NULL) != v)
        snprintf(b, sizeof(b), "%.17g", v);
    writer_puts(w, b);
}

bool metrics_name_is_valid(const char *s) {
    if (isempty(s))
        return false;
    for (const char *p = s; *p; p++) {
        bool alpha = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' || *p == ':';
        bool digit = *p >= '0' && *p <= '9';
        if (!alpha && !(digit && p != s))
            return false;
    }
    return true;
}

bool metrics_label_name_is_valid(const char *s) {
    if (isempty(s) || strncmp(s, "__", 2) == 0)
        return false;
    for (const char *p = s; *p; p++) {
        bool alpha = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_';
        bool digit = *p >= '0' && *p <= '9';
        if (!alpha && !(digit && p != s))
            return false;
    }
    return true;
}

static bool endswith(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && streq(s + a - b, suffix);
}

int metrics_writer_family(MetricsWriter *w, const char *name, MetricType type, const char *help) {
    if (!w || !metrics_name_is_valid(name) || !metric_type_to_string(type))
        return -EINVAL;
    /* The parser strips _total from counter family names; requiring it keeps
     * the exposition and what scrapers store the same name. */
    if (type == METRIC_COUNTER && !endswith(name, "_total"))
        return -EINVAL;
    if (strv_contains((const char *const *) w->seen, name))
        return -EEXIST;
    /* Parsers name a counter family without its _total, so counter
     * "x_total" and gauge "x" would be one family to them: reserve both. */
    _cleanup_free_ char *base = NULL;
    if (type == METRIC_COUNTER) {
        base = strndup(name, strlen(name) - strlen("_total"));
        if (!base)
            return -ENOMEM;
        if (strv_contains((const char *const *) w->seen, base))
            return -EEXIST;
    }
    int r = strv_extend(&w->seen, name);
    if (r < 0)
        return r;
    if (base) {
        r = strv_extend(&w->seen, base);
        if (r < 0)
            return r;
    }
    char *f = strdup(name);
    if (!f)
        return -ENOMEM;
    free(w->family);
    w->family = f;
    w->type = type;

    writer_printf(w, "# HELP %s ", name);
    writer_escaped(w, help ?: "", false);
    writer_printf(w, "\n# TYPE %s %s\n", name, metric_type_to_string(type));
    return w->oom ? -ENOMEM : 0;
}

static int labels_check(const char *const *labels, bool allow_le) {
    size_t i = 0;
    for (; labels && labels[i]; i += 2) {
        if (!labels[i + 1])
            return -EINVAL; /* odd list */
        if (!metrics_label_name_is_valid(labels[i]))
            return -EINVAL;
        if (!allow_le && streq(labels[i], "le"))
            return -EINVAL;
        for (size_t j = 0; j < i; j += 2)
            if (streq(labels[j], labels[i]))
                return -EINVAL; /* duplicate label */
    }
    return 0;
}

/* Writes name+suffix{labels[,extra_name="extra_value"]} value\n */
static void writer_line(MetricsWriter *w, const char *suffix, const char *const *labels,
                        const char *extra_name, const char *extra_value, double value) {
    writer_puts(w, w->family);
    writer_puts(w, suffix);
    bool any = (labels && labels[0]) || extra_name;
    if (any) {
        writer_puts(w, "{");
        bool first = true;
        for (size_t i = 0; labels && labels[i]; i += 2) {
            writer_printf(w, "%s%s=\"", first ? "" : ",", labels[i]);
            writer_escaped(w, labels[i + 1], true);
            writer_puts(w, "\"");
            first = false;
        }
        if (extra_name)
            writer_printf(w, "%s%s=\"%s\"", first ? "" : ",", extra_name, extra_value);
        writer_puts(w, "}");
    }
    writer_puts(w, " ");
    writer_value(w, value);
    writer_puts(w, "\n");
}

int metrics_writer_sample(MetricsWriter *w, const char *const *labels, double value) {
    if (!w || !w->family || w->type == METRIC_HISTOGRAM)
        return -EINVAL;
    if (w->type == METRIC_COUNTER && (isnan(value) || value < 0))
        return -EINVAL;
    int r = labels_check(labels, true);
    if (r < 0)
        return r;
    writer_line(w, "", labels, NULL, NULL, value);
    return w->oom ? -ENOMEM : 0;
}

int metrics_writer_histogram(MetricsWriter *w, const char *const *labels,
                             const double *bounds, const uint64_t *counts, size_t n,
                             uint64_t overflow, double sum) {
    if (!w || !w->family || w->type != METRIC_HISTOGRAM)
        return -EINVAL;
    if (n > 0 && (!bounds || !counts))
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(bounds[i]) || (i > 0 && bounds[i] <= bounds[i - 1]))
            return -EINVAL;
    int r = labels_check(labels, false);
    if (r < 0)
        return r;

    uint64_t cumulative = 0;
    char le[64];
    for (size_t i = 0; i < n; i++) {
        cumulative += counts[i];
        snprintf(le, sizeof(le), "%.15g", bounds[i]);
        if (strtod(le, NULL) != bounds[i])
            snprintf(le, sizeof(le), "%.17g", bounds[i]);
        writer_line(w, "_bucket", labels, "le", le, (double) cumulative);
    }
    cumulative += overflow;
    writer_line(w, "_bucket", labels, "le", "+Inf", (double) cumulative);
    writer_line(w, "_sum", labels, NULL, NULL, sum);
    writer_line(w, "_count", labels, NULL, NULL, (double) cumulative);
    return w->oom ? -ENOMEM : 0;
}

int metrics_writer_steal(MetricsWriter *w, char **ret, size_t *ret_len) {
    if (!w || !ret)
        return -EINVAL;
    if (w->oom)
        return -ENOMEM;
    if (!w->buf) {
        char *e = strdup("");
        if (!e)
            return -ENOMEM;
        *ret = e;
    } else
        *ret = TAKE_PTR(w->buf);
    if (ret_len)
        *ret_len = w->len;
    w->len = w->allocated = 0;
    return 0;
}
