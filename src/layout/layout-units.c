/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Sizes, durations and names as the layout language spells them
 * (docs/layout.md, "Values"). Pure string functions.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>

#include "layout.h"

typedef struct Unit {
    const char *suffix;
    uint64_t factor;
} Unit;

/* Binary only. "KB"/"MB"/... are rejected on purpose (see docs/layout.md):
 * people mean both 1000 and 1024 by them, and a volume size off by 7% is a
 * bad surprise. */
static const Unit size_units[] = {
    { "", 1 },          { "B", 1 },
    { "K", KIB },       { "KiB", KIB },
    { "M", MIB },       { "MiB", MIB },
    { "G", GIB },       { "GiB", GIB },
    { "T", TIB },       { "TiB", TIB },
};

static const Unit duration_units[] = {
    { "us", 1 },
    { "usec", 1 },
    { "ms", USEC_PER_MSEC },
    { "msec", USEC_PER_MSEC },
    { "s", USEC_PER_SEC },
    { "sec", USEC_PER_SEC },
    { "min", 60 * USEC_PER_SEC },
    { "h", 3600 * USEC_PER_SEC },
    { "d", 86400 * USEC_PER_SEC },
    { "w", 7 * 86400 * USEC_PER_SEC },
};

/* Parses the leading decimal digits of *p into *ret, advancing *p. */
static int parse_digits(const char **p, uint64_t *ret) {
    const char *s = *p;
    uint64_t v = 0;
    if (!isdigit((unsigned char) *s))
        return -EINVAL;
    for (; isdigit((unsigned char) *s); s++) {
        unsigned d = (unsigned) (*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -ERANGE;
        v = v * 10 + d;
    }
    *p = s;
    *ret = v;
    return 0;
}

static const Unit *unit_lookup(const Unit *units, size_t n, const char *s, size_t len) {
    for (size_t i = 0; i < n; i++)
        if (strlen(units[i].suffix) == len && strncmp(units[i].suffix, s, len) == 0)
            return &units[i];
    return NULL;
}

int layout_parse_size(const char *s, uint64_t *ret) {
    if (!s)
        return -EINVAL;
    const char *p = s;
    uint64_t v;
    int r = parse_digits(&p, &v);
    if (r < 0)
        return r;
    /* "512 MiB" is fine, "512 " is not: a space must separate a unit. */
    if (*p == ' ') {
        while (*p == ' ')
            p++;
        if (!*p)
            return -EINVAL;
    }
    const Unit *u = unit_lookup(size_units, ELEMENTSOF(size_units), p, strlen(p));
    if (!u)
        return -EINVAL;
    if (u->factor > 1 && v > UINT64_MAX / u->factor)
        return -ERANGE;
    *ret = v * u->factor;
    return 0;
}

int layout_parse_duration(const char *s, usec_t *ret) {
    if (!s)
        return -EINVAL;
    const char *p = s;
    usec_t total = 0;
    bool any = false;

    /* A bare "0" means "off" wherever zero is allowed; any other number
     * needs a unit, since "30" could be seconds or milliseconds. */
    if (streq(s, "0")) {
        *ret = 0;
        return 0;
    }
    while (*p) {
        uint64_t v;
        int r = parse_digits(&p, &v);
        if (r < 0)
            return r;
        while (*p == ' ')
            p++;
        const char *u0 = p;
        while (isalpha((unsigned char) *p))
            p++;
        const Unit *u = unit_lookup(duration_units, ELEMENTSOF(duration_units), u0, (size_t) (p - u0));
        if (!u)
            return -EINVAL;
        if (v > (UINT64_MAX - total) / u->factor)
            return -ERANGE;
        total += v * u->factor;
        any = true;
        if (*p == ' ') {
            while (*p == ' ')
                p++;
            if (!*p)
                return -EINVAL;
        }
    }
    if (!any)
        return -EINVAL;
    *ret = total;
    return 0;
}

int layout_format_size(uint64_t bytes, char **ret) {
    static const Unit out[] = { { "TiB", TIB }, { "GiB", GIB }, { "MiB", MIB }, { "KiB", KIB } };
    char *s = NULL;
    int k = -1;
    if (bytes != 0)
        for (size_t i = 0; i < ELEMENTSOF(out); i++)
            if (bytes % out[i].factor == 0) {
                k = asprintf(&s, "%" PRIu64 "%s", bytes / out[i].factor, out[i].suffix);
                break;
            }
    if (!s)
        k = asprintf(&s, "%" PRIu64, bytes);
    if (k < 0)
        return -ENOMEM;
    *ret = s;
    return 0;
}

int layout_format_duration(usec_t usec, char **ret) {
    static const Unit out[] = {
        { "d", 86400 * USEC_PER_SEC }, { "h", 3600 * USEC_PER_SEC }, { "min", 60 * USEC_PER_SEC },
        { "s", USEC_PER_SEC },         { "ms", USEC_PER_MSEC },      { "us", 1 },
    };
    char *s = NULL;
    int k;
    if (usec == 0)
        k = asprintf(&s, "0");
    else {
        size_t i = 0;
        while (usec % out[i].factor != 0)
            i++;
        k = asprintf(&s, "%" PRIu64 "%s", usec / out[i].factor, out[i].suffix);
    }
    if (k < 0)
        return -ENOMEM;
    *ret = s;
    return 0;
}

bool layout_name_is_valid(const char *s, size_t max) {
    if (isempty(s))
        return false;
    size_t n = strlen(s);
    if (n > max)
        return false;
    if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9')))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}
