/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Splits a daemon's output into lines of bounded length. A line longer
 * than LINEBUF_MAX is passed on truncated, and the rest of it (up to the
 * next newline) is dropped, so a chatty or binary-spewing daemon costs the
 * agent bounded memory. Pure: no I/O.
 */

#include <stdbool.h>
#include <stddef.h>

#define LINEBUF_MAX 1024

typedef struct LineBuffer {
    char buf[LINEBUF_MAX + 1];
    size_t n;
    bool skipping;    /* dropping the tail of an overlong line */
    size_t dropped;   /* bytes dropped so far (statistics) */
} LineBuffer;

/* Called with a NUL-terminated line (no newline); truncated = it was cut. */
typedef void (*LineCallback)(const char *line, bool truncated, void *userdata);

/* Feeds data; calls cb for every complete (or overlong) line. */
void linebuf_feed(LineBuffer *b, const char *data, size_t len, LineCallback cb, void *userdata);
/* At end of input: passes on a pending partial line, if any. */
void linebuf_flush(LineBuffer *b, LineCallback cb, void *userdata);
