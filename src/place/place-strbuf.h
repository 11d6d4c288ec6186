/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A growable string for building explanations (internal to src/place/).
 * An allocation failure is sticky: later appends do nothing and
 * place_strbuf_finish() returns -ENOMEM, so callers check once at the end.
 */

#include <stdarg.h>
#include <stddef.h>

#include "macro.h"

typedef struct PlaceStrbuf {
    char *s;
    size_t len, cap;
    int error;
} PlaceStrbuf;

void place_strbuf_append(PlaceStrbuf *b, const char *fmt, ...) _printf_(2, 3);
/* Hands the string over (never NULL on success). Returns -ENOMEM or 0. */
int place_strbuf_finish(PlaceStrbuf *b, char **ret);
void place_strbuf_done(PlaceStrbuf *b);
