/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Strings that came from elsewhere (labels, ids, messages in an API
 * answer) on their way to a terminal. A terminal acts on control
 * characters (C0, DEL, C1: ESC starts a sequence, 0x9b is CSI) and the
 * bidirectional formatting characters reorder what follows them (the
 * "Trojan Source" trick), so none of these may reach it raw. The escapes
 * are util-linux's (lsblk, findmnt): every byte of such a character, and
 * of invalid UTF-8, as \xHH, and a backslash that precedes an 'x' as \x5c,
 * so that the output reads back unambiguously. Pure; no allocation
 * unless said.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether code point c must never reach a terminal raw: C0 (tab and
 * newline too: they break a table's cell), DEL, C1, the bidi marks,
 * embeddings, overrides and isolates (U+061C, U+200E-F, U+202A-E,
 * U+2066-9) and the line and paragraph separators (U+2028-9). */
bool unichar_is_unsafe(uint32_t c);

/* Decodes the UTF-8 sequence at s (n bytes available: a NUL is not
 * looked past). Overlong forms, surrogates and values past U+10FFFF are
 * invalid. Returns: -EILSEQ, or its length (1-4) with *ret. */
int utf8_decode(const char *s, size_t n, uint32_t *ret);

/* Whether s holds no unsafe character and is valid UTF-8 (NULL: true). */
bool str_is_terminal_safe(const char *s);

/* A copy of s (NULL: NULL) with the escapes above. Returns NULL on OOM. */
char *str_escape_terminal(const char *s);

/*
 * A copy of JSON text in which every unsafe character other than the
 * whitespace between tokens (tab, newline, carriage return) is written as
 * \uXXXX, and each byte of invalid UTF-8 as \ufffd. The JSON means the
 * same (inside a string \u202e is U+202E), but the text is safe to print.
 * Returns NULL on OOM.
 */
char *json_text_make_safe(const char *text);
