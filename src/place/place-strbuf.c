/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "place-strbuf.h"

void place_strbuf_append(PlaceStrbuf *b, const char *fmt, ...) {
    if (b->error)
        return;
    for (;;) {
        size_t avail = b->cap - b->len;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, avail, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->error = -EINVAL;
            return;
        }
        if ((size_t) n < avail) {
            b->len += (size_t) n;
            return;
        }
        size_t cap = MAX(b->cap * 2, b->len + (size_t) n + 64);
        char *t = realloc(b->s, cap);
        if (!t) {
            b->error = -ENOMEM;
            return;
        }
        b->s = t;
        b->cap = cap;
    }
}

int place_strbuf_finish(PlaceStrbuf *b, char **ret) {
    if (b->error) {
        place_strbuf_done(b);
        return b->error;
    }
    if (!b->s) {
        b->s = strdup("");
        if (!b->s)
            return -ENOMEM;
    }
    *ret = b->s;
    *b = (PlaceStrbuf) {};
    return 0;
}

void place_strbuf_done(PlaceStrbuf *b) {
    int e = b->error;
    free(b->s);
    *b = (PlaceStrbuf) {};
    b->error = e;
}
