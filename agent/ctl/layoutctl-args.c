/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The command line errors every verb shares: one line that says what was
 * wrong and, for a typo, what was meant ("did you mean"), instead of the
 * whole help (git's and systemctl's way).
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "layoutctl.h"
#include "util.h"

/* Optimal string alignment distance (Damerau-Levenshtein without
 * repeated edits of one substring): a swapped pair of letters is one
 * typo, as people make them. */
static size_t edit_distance(const char *a, const char *b) {
    size_t n = strlen(a), m = strlen(b);
    if (n > 64 || m > 64)
        return SIZE_MAX;
    size_t d[65][65];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            size_t v = MIN(MIN(d[i - 1][j] + 1, d[i][j - 1] + 1), d[i - 1][j - 1] + cost);
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                v = MIN(v, d[i - 2][j - 2] + 1);
            d[i][j] = v;
        }
    return d[n][m];
}

const char *layoutctl_suggest(const char *word, const char *const *candidates, size_t n) {
    const char *best = NULL, *prefixed = NULL;
    size_t best_d = SIZE_MAX, n_prefixed = 0, len = strlen(word);
    if (len == 0)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (!candidates[i])
            continue;
        if (strncmp(candidates[i], word, len) == 0) {
            prefixed = candidates[i];
            n_prefixed++;
        }
        size_t d = edit_distance(word, candidates[i]);
        if (d < best_d) {
            best_d = d;
            best = candidates[i];
        }
    }
    if (best && best_d <= MAX((size_t) 1, len / 3))
        return best;
    return n_prefixed == 1 ? prefixed : NULL;
}

int layoutctl_usage_error(const char *verb, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "layoutctl%s%s: ", verb ? " " : "", verb ?: "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see 'layoutctl%s%s --help')\n", verb ? " " : "", verb ?: "");
    return LAYOUTCTL_EXIT_USAGE;
}

int layoutctl_option_error(const char *verb, char **argv, const struct option *options, int c) {
    /* The word as typed: getopt has stepped past it. A short option in a
     * cluster ("-xo") is named on its own. */
    const char *token = optind > 0 ? argv[optind - 1] : "?";
    char shortopt[3] = { '-', (char) optopt, 0 };
    bool is_long = token && strncmp(token, "--", 2) == 0;
    if (!is_long && optopt > 0 && optopt < 128)
        token = shortopt;
    _cleanup_free_ char *name = strndup(token, strcspn(token, "="));
    if (!name)
        return LAYOUTCTL_EXIT_USAGE;

    if (c == ':')
        return layoutctl_usage_error(verb, "option '%s' needs an argument", name);

    const char *names[64];
    size_t n = 0;
    for (size_t i = 0; options && options[i].name && n < ELEMENTSOF(names); i++)
        names[n++] = options[i].name;
    if (is_long && optopt == 0) {
        /* Ambiguous (a prefix of two or more), or unknown. */
        size_t matches = 0;
        for (size_t i = 0; i < n; i++)
            matches += strncmp(names[i], name + 2, strlen(name + 2)) == 0;
        if (matches > 1) {
            fprintf(stderr, "layoutctl%s%s: option '%s' is ambiguous; it could be", verb ? " " : "", verb ?: "",
                    name);
            const char *sep = " ";
            for (size_t i = 0; i < n; i++)
                if (strncmp(names[i], name + 2, strlen(name + 2)) == 0) {
                    fprintf(stderr, "%s'--%s'", sep, names[i]);
                    sep = ", ";
                }
            fputc('\n', stderr);
            return LAYOUTCTL_EXIT_USAGE;
        }
        const char *s = layoutctl_suggest(name + 2, names, n);
        if (s)
            return layoutctl_usage_error(verb, "unknown option '%s'; did you mean '--%s'?", name, s);
        return layoutctl_usage_error(verb, "unknown option '%s'", name);
    }
    if (is_long) /* a known long option that takes no argument, given one */
        return layoutctl_usage_error(verb, "option '%s' takes no argument", name);
    return layoutctl_usage_error(verb, "unknown option '%s'", name);
}
