/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <string.h>

#include "linebuf.h"

void linebuf_feed(LineBuffer *b, const char *data, size_t len, LineCallback cb, void *userdata) {
    while (len > 0) {
        const char *nl = memchr(data, '\n', len);
        size_t chunk = nl ? (size_t) (nl - data) : len;

        if (b->skipping) {
            b->dropped += chunk;
        } else {
            size_t room = LINEBUF_MAX - b->n;
            size_t take = chunk < room ? chunk : room;
            memcpy(b->buf + b->n, data, take);
            b->n += take;
            if (take < chunk) {
                /* Overlong: pass on what fits, drop the rest of the line. */
                b->buf[b->n] = 0;
                cb(b->buf, true, userdata);
                b->n = 0;
                b->skipping = true;
                b->dropped += chunk - take;
            }
        }

        if (!nl)
            return;
        if (!b->skipping) {
            b->buf[b->n] = 0;
            cb(b->buf, false, userdata);
        }
        b->n = 0;
        b->skipping = false;
        data += chunk + 1;
        len -= chunk + 1;
    }
}

void linebuf_flush(LineBuffer *b, LineCallback cb, void *userdata) {
    if (b->n > 0 && !b->skipping) {
        b->buf[b->n] = 0;
        cb(b->buf, false, userdata);
    }
    b->n = 0;
    b->skipping = false;
}
