/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The error list of a parse: every problem, in file order. */
#include <stdio.h>

#include "layout-internal.h"

void layout_errors_clear(LayoutErrors *e) {
    if (!e)
        return;
    for (size_t i = 0; i < e->n; i++) {
        free(e->items[i].file);
        free(e->items[i].message);
    }
    free(e->items);
    e->items = NULL;
    e->n = 0;
}

int layout_errors_add(LayoutErrors *e, const char *file, unsigned line, unsigned column, const char *fmt, ...) {
    if (!e)
        return 0;
    if (e->n > LAYOUT_ERRORS_MAX)
        return 0;

    _cleanup_free_ char *msg = NULL, *f = NULL;
    if (e->n == LAYOUT_ERRORS_MAX) {
        msg = strdup("too many errors, not reporting the rest");
        line = column = 0;
    } else {
        va_list ap;
        va_start(ap, fmt);
        int k = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (k < 0)
            msg = NULL;
    }
    f = strdup(file ?: "<input>");
    if (!msg || !f)
        return -ENOMEM;

    LayoutError *t = realloc(e->items, sizeof(LayoutError) * (e->n + 1));
    if (!t)
        return -ENOMEM;
    e->items = t;
    e->items[e->n++] = (LayoutError) {
        .file = TAKE_PTR(f),
        .line = line,
        .column = column,
        .message = TAKE_PTR(msg),
    };
    return 0;
}

static bool error_before(const LayoutError *a, const LayoutError *b) {
    return a->line < b->line || (a->line == b->line && a->column < b->column);
}

void layout_errors_sort(LayoutErrors *e) {
    /* Insertion sort: stable, and the list is short (LAYOUT_ERRORS_MAX).
     * The "too many errors" note stays last. */
    size_t n = e->n;
    if (n > LAYOUT_ERRORS_MAX)
        n = LAYOUT_ERRORS_MAX;
    for (size_t i = 1; i < n; i++) {
        LayoutError x = e->items[i];
        size_t j = i;
        while (j > 0 && error_before(&x, &e->items[j - 1])) {
            e->items[j] = e->items[j - 1];
            j--;
        }
        e->items[j] = x;
    }
}
