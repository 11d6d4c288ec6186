/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Escaping for terminals; see escape.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"

bool unichar_is_unsafe(uint32_t c) {
    return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x061c || c == 0x200e || c == 0x200f ||
           (c >= 0x2028 && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

int utf8_decode(const char *s, size_t n, uint32_t *ret) {
    const unsigned char *p = (const unsigned char *) s;
    if (n == 0)
        return -EILSEQ;
    if (p[0] < 0x80) {
        *ret = p[0];
        return 1;
    }
    size_t len;
    uint32_t c, min;
    if ((p[0] & 0xe0) == 0xc0)
        len = 2, c = p[0] & 0x1f, min = 0x80;
    else if ((p[0] & 0xf0) == 0xe0)
        len = 3, c = p[0] & 0x0f, min = 0x800;
    else if ((p[0] & 0xf8) == 0xf0)
        len = 4, c = p[0] & 0x07, min = 0x10000;
    else
        return -EILSEQ;
    if (len > n)
        return -EILSEQ;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return -EILSEQ;
        c = (c << 6) | (p[i] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return -EILSEQ;
    *ret = c;
    return (int) len;
}

bool str_is_terminal_safe(const char *s) {
    size_t n = s ? strlen(s) : 0;
    for (size_t i = 0; i < n;) {
        uint32_t c;
        int k = utf8_decode(s + i, n - i, &c);
        if (k < 0 || unichar_is_unsafe(c))
            return false;
        i += (size_t) k;
    }
    return true;
}

char *str_escape_terminal(const char *s) {
    if (!s)
        return NULL;
    size_t n = strlen(s);
    /* At worst every byte becomes four. */
    char *out = malloc(4 * n + 1), *o = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n;) {
        uint32_t c;
        int k = utf8_decode(s + i, n - i, &c);
        if (k < 0 || unichar_is_unsafe(c) || (c == '\\' && s[i + 1] == 'x')) {
            size_t bytes = k < 0 ? 1 : (size_t) k;
            for (size_t j = 0; j < bytes; j++)
                o += sprintf(o, "\\x%02x", (unsigned char) s[i + j]);
            i += bytes;
            continue;
        }
        memcpy(o, s + i, (size_t) k);
        o += k;
        i += (size_t) k;
    }
    *o = 0;
    return out;
}

char *json_text_make_safe(const char *text) {
    if (!text)
        return NULL;
    size_t n = strlen(text);
    /* At worst every byte becomes "\ufffd" (6). */
    char *out = malloc(6 * n + 1), *o = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n;) {
        uint32_t c;
        int k = utf8_decode(text + i, n - i, &c);
        if (k < 0) {
            o += sprintf(o, "\\ufffd");
            i++;
            continue;
        }
        if (unichar_is_unsafe(c) && !(c == '\t' || c == '\n' || c == '\r'))
            o += sprintf(o, "\\u%04x", (unsigned) c);
        else {
            memcpy(o, text + i, (size_t) k);
            o += k;
        }
        i += (size_t) k;
    }
    *o = 0;
    return out;
}
