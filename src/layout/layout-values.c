/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The validator's vocabulary: the error sink, mapping helpers and typed
 * value readers (layout-parser.h). Each reader reports its own error at
 * the node and returns false, so a schema walk reads as a list of keys.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>

#include "layout-parser.h"
#include "util.h"

/* Every error goes through here; an allocation failure is remembered and
 * turned into -ENOMEM at the end. */
_printf_(3, 4) void lp_err(Parser *p, const LayoutNode *at, const char *fmt, ...) {
    _cleanup_free_ char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    int k = vasprintf(&msg, fmt, ap);
    va_end(ap);
    if (k < 0) {
        p->oom = -ENOMEM;
        return;
    }
    if (layout_errors_add(p->errors, p->name, at ? at->line : 0, at ? at->column : 0, "%s", msg) < 0)
        p->oom = -ENOMEM;
}

void *lp_oom(Parser *p) {
    p->oom = -ENOMEM;
    return NULL;
}

char *lp_strdup(Parser *p, const char *s) {
    char *c = strdup(s);
    return c ?: lp_oom(p);
}

/* ---- node helpers ---- */

bool lp_node_is_null(const LayoutNode *n) {
    return n->type == LAYOUT_NODE_SCALAR && n->plain &&
           (isempty(n->value) || STR_IN_SET(n->value, "~", "null", "Null", "NULL"));
}

const char *lp_node_kind(const LayoutNode *n) {
    if (n->type == LAYOUT_NODE_MAPPING)
        return "a mapping";
    if (n->type == LAYOUT_NODE_SEQUENCE)
        return "a list";
    if (lp_node_is_null(n))
        return "an empty value";
    return "a scalar";
}

/* Key of pair i of a mapping, if it is a usable string. */
const char *lp_map_key(const LayoutNode *map, size_t i) {
    const LayoutNode *k = map->items[2 * i];
    if (k->type != LAYOUT_NODE_SCALAR || k->invalid)
        return NULL;
    return k->value;
}

size_t lp_map_pairs(const LayoutNode *map) {
    return map->n_items / 2;
}

/* First value for key, or NULL. Duplicates were reported by lp_map_check(). */
LayoutNode *lp_map_get(const LayoutNode *map, const char *key, LayoutNode **ret_key) {
    if (!map || map->type != LAYOUT_NODE_MAPPING)
        return NULL;
    for (size_t i = 0; i < lp_map_pairs(map); i++) {
        const char *k = lp_map_key(map, i);
        if (k && streq(k, key)) {
            if (ret_key)
                *ret_key = map->items[2 * i];
            return map->items[2 * i + 1];
        }
    }
    return NULL;
}

/* Levenshtein distance, for "did you mean". Keys are short. */
static size_t edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return SIZE_MAX;
    size_t prev[65], cur[65];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            cur[j] = MIN(MIN(prev[j] + 1, cur[j - 1] + 1), sub);
        }
        memcpy(prev, cur, sizeof(size_t) * (lb + 1));
    }
    return prev[lb];
}

const char *lp_did_you_mean(const char *key, const char *const *known) {
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    for (const char *const *k = known; *k; k++) {
        size_t d = edit_distance(key, *k);
        if (d < best_d) {
            best_d = d;
            best = *k;
        }
    }
    /* Close enough to be a typo, not a different word. */
    size_t limit = MAX((size_t) 2, strlen(key) / 3);
    if (best_d <= limit)
        return best;
    /* An abbreviation: "strict" for "strict_limit". */
    if (strlen(key) >= 4)
        for (const char *const *k = known; *k; k++)
            if (strncmp(*k, key, strlen(key)) == 0)
                return *k;
    return NULL;
}

char *lp_join_keys(const char *const *known) {
    size_t n = 1;
    for (const char *const *k = known; *k; k++)
        n += strlen(*k) + 2;
    char *s = malloc(n);
    if (!s)
        return NULL;
    s[0] = 0;
    for (const char *const *k = known; *k; k++) {
        if (k != known)
            strcat(s, ", ");
        strcat(s, *k);
    }
    return s;
}

/* Reports an unknown key with a suggestion, or the list of known keys. */
static void unknown_key(Parser *p, const LayoutNode *key, const char *const *known, const char *where) {
    const char *s = lp_did_you_mean(key->value, known);
    if (s) {
        lp_err(p, key, "unknown key '%s' in %s; did you mean '%s'?", key->value, where, s);
        return;
    }
    _cleanup_free_ char *list = lp_join_keys(known);
    if (!list) {
        lp_oom(p);
        return;
    }
    lp_err(p, key, "unknown key '%s' in %s; expected one of: %s", key->value, where, list);
}

/*
 * Checks that node is a mapping, that its keys are strings, that no key is
 * there twice, and that every key is known. `skip` lists keys the caller
 * reports itself (with a better message than "unknown"). Returns false if
 * node is not a mapping (already reported).
 */
bool lp_map_check(Parser *p, const LayoutNode *node, const char *const *known, const char *const *skip,
                      const char *where) {
    if (node->invalid)
        return false;
    if (node->type != LAYOUT_NODE_MAPPING) {
        lp_err(p, node, "%s must be a mapping (key: value lines), got %s", where, lp_node_kind(node));
        return false;
    }
    /* The duplicate check is quadratic; no real mapping comes near this. */
    if (lp_map_pairs(node) > LAYOUT_ITEMS_MAX) {
        lp_err(p, node, "%s has %zu keys, more than the %d allowed", where, lp_map_pairs(node), LAYOUT_ITEMS_MAX);
        return false;
    }
    for (size_t i = 0; i < lp_map_pairs(node); i++) {
        const LayoutNode *k = node->items[2 * i];
        if (k->invalid)
            continue;
        if (k->type != LAYOUT_NODE_SCALAR) {
            lp_err(p, k, "keys in %s must be plain strings, got %s", where, lp_node_kind(k));
            continue;
        }
        bool dup = false;
        for (size_t j = 0; j < i && !dup; j++) {
            const char *o = lp_map_key(node, j);
            if (o && streq(o, k->value)) {
                const LayoutNode *first = node->items[2 * j];
                lp_err(p, k, "duplicate key '%s' in %s (first given at line %u, column %u)", k->value, where,
                    first->line, first->column);
                dup = true;
            }
        }
        if (dup)
            continue;
        if (known && !strv_contains(known, k->value) && !(skip && strv_contains(skip, k->value)))
            unknown_key(p, k, known, where);
    }
    return true;
}

/* ---- typed values; each reports its own error and returns false ---- */

const char *lp_get_scalar(Parser *p, const LayoutNode *n, const char *key, const char *expected) {
    if (n->invalid)
        return NULL;
    if (n->type != LAYOUT_NODE_SCALAR || lp_node_is_null(n)) {
        lp_err(p, n, "%s: expected %s, got %s", key, expected, lp_node_kind(n));
        return NULL;
    }
    return n->value;
}

bool lp_get_string(Parser *p, const LayoutNode *n, const char *key, char **out) {
    const char *s = lp_get_scalar(p, n, key, "a string");
    if (!s)
        return false;
    for (const char *c = s; *c; c++)
        if ((unsigned char) *c < 0x20 || *c == 0x7f) {
            lp_err(p, n, "%s: control characters (such as newlines) are not allowed", key);
            return false;
        }
    char *c = lp_strdup(p, s);
    if (!c)
        return false;
    free(*out);
    *out = c;
    return true;
}

/* true or false, or WORD (NULL: none) as a third value. YAML 1.1's
 * other booleans (yes, on, ...) are refused with a hint: libyaml reads
 * them as strings, and an operator who wrote one meant something. */
bool lp_get_bool_or(Parser *p, const LayoutNode *n, const char *key, const char *word, bool *out, bool *ret_word) {
    _cleanup_free_ char *expected = NULL;
    if (word && asprintf(&expected, "%s, true or false", word) < 0) {
        lp_oom(p);
        return false;
    }
    const char *s = lp_get_scalar(p, n, key, expected ?: "true or false");
    if (!s)
        return false;
    if (word && streq(s, word)) {
        *ret_word = true;
        return true;
    }
    if (STR_IN_SET(s, "true", "True", "TRUE", "false", "False", "FALSE")) {
        *out = STR_IN_SET(s, "true", "True", "TRUE");
        if (ret_word)
            *ret_word = false;
        return true;
    }
    lp_err(p, n, "%s: expected %s, got '%s'%s", key, expected ?: "true or false", s,
           STR_IN_SET(s, "yes", "no", "on", "off", "y", "n", "Yes", "No", "On", "Off", "1", "0")
               ? " (YAML 1.1 and 1.2 read it differently; write true or false)"
               : "");
    return false;
}

bool lp_get_bool(Parser *p, const LayoutNode *n, const char *key, bool *out) {
    return lp_get_bool_or(p, n, key, NULL, out, NULL);
}

bool lp_get_uint(Parser *p, const LayoutNode *n, const char *key, uint64_t min, uint64_t max, uint64_t *out) {
    const char *s = lp_get_scalar(p, n, key, "a whole number");
    if (!s)
        return false;
    if (s[0] == '-') {
        lp_err(p, n, "%s: must not be negative, got %s", key, s);
        return false;
    }
    const char *c = s;
    if (*c == '+')
        c++;
    if (!*c)
        goto bad;
    uint64_t v = 0;
    for (; *c; c++) {
        if (!isdigit((unsigned char) *c))
            goto bad;
        unsigned d = (unsigned) (*c - '0');
        if (v > (UINT64_MAX - d) / 10) {
            lp_err(p, n, "%s: number too large, expected %" PRIu64 "..%" PRIu64, key, min, max);
            return false;
        }
        v = v * 10 + d;
    }
    if (v < min || v > max) {
        lp_err(p, n, "%s: must be between %" PRIu64 " and %" PRIu64 ", got %" PRIu64, key, min, max, v);
        return false;
    }
    *out = v;
    return true;
bad:
    lp_err(p, n, "%s: expected a whole number (%" PRIu64 "..%" PRIu64 "), got '%s'", key, min, max, s);
    return false;
}

bool lp_get_unsigned(Parser *p, const LayoutNode *n, const char *key, unsigned min, unsigned max,
                         unsigned *out) {
    uint64_t v;
    if (!lp_get_uint(p, n, key, min, max, &v))
        return false;
    *out = (unsigned) v;
    return true;
}

bool lp_get_int(Parser *p, const LayoutNode *n, const char *key, int64_t min, int64_t max, int64_t *out) {
    const char *s = lp_get_scalar(p, n, key, "a whole number");
    if (!s)
        return false;
    const char *c = s + (*s == '-' || *s == '+');
    bool ok = *c != 0 && strlen(c) <= 18;
    for (const char *d = c; ok && *d; d++)
        ok = isdigit((unsigned char) *d);
    if (!ok) {
        lp_err(p, n, "%s: expected a whole number (%" PRId64 "..%" PRId64 "), got '%s'", key, min, max, s);
        return false;
    }
    int64_t v = strtoll(s, NULL, 10);
    if (v < min || v > max) {
        lp_err(p, n, "%s: must be between %" PRId64 " and %" PRId64 ", got %s", key, min, max, s);
        return false;
    }
    *out = v;
    return true;
}

bool lp_get_size(Parser *p, const LayoutNode *n, const char *key, uint64_t *out) {
    const char *s = lp_get_scalar(p, n, key, "a size such as 512MiB or 4G");
    if (!s)
        return false;
    uint64_t v;
    int r = layout_parse_size(s, &v);
    if (r == -ERANGE) {
        lp_err(p, n, "%s: size '%s' is too large", key, s);
        return false;
    }
    if (r < 0) {
        const char *u = s;
        while (*u == '-' || isdigit((unsigned char) *u) || *u == ' ')
            u++;
        if (s[0] == '-')
            lp_err(p, n, "%s: a size must not be negative, got '%s'", key, s);
        else if (STR_IN_SET(u, "KB", "MB", "GB", "TB", "kB", "kb", "mb", "gb", "tb"))
            lp_err(p, n, "%s: '%s' is ambiguous (1000 or 1024?); use %.1siB (binary) or %.1s", key, u,
                u[0] == 'k' ? "K" : u, u[0] == 'k' ? "K" : u);
        else
            lp_err(p, n, "%s: invalid size '%s': expected a whole number of bytes, optionally followed by "
                "one of KiB, MiB, GiB, TiB (or K, M, G, T; all binary)", key, s);
        return false;
    }
    *out = v;
    return true;
}

bool lp_get_percent(Parser *p, const LayoutNode *n, const char *key, unsigned min, unsigned max, unsigned *out) {
    const char *s = lp_get_scalar(p, n, key, "a percentage such as 80%");
    if (!s)
        return false;
    size_t len = strlen(s);
    bool ok = len >= 2 && len <= 4 && s[len - 1] == '%';
    unsigned v = 0;
    for (size_t i = 0; ok && i + 1 < len; i++) {
        if (!isdigit((unsigned char) s[i]))
            ok = false;
        else
            v = v * 10 + (unsigned) (s[i] - '0');
    }
    if (!ok) {
        lp_err(p, n, "%s: expected a whole percentage such as 80%%, got '%s'", key, s);
        return false;
    }
    if (v < min || v > max) {
        lp_err(p, n, "%s: must be between %u%% and %u%%, got %s", key, min, max, s);
        return false;
    }
    *out = v;
    return true;
}

bool lp_get_duration(Parser *p, const LayoutNode *n, const char *key, usec_t *out) {
    const char *s = lp_get_scalar(p, n, key, "a duration such as 500ms, 30s, 5min, 1h or 1d");
    if (!s)
        return false;
    usec_t v;
    int r = layout_parse_duration(s, &v);
    if (r == -ERANGE) {
        lp_err(p, n, "%s: duration '%s' is too large", key, s);
        return false;
    }
    if (r < 0) {
        bool digits = *s != 0;
        for (const char *c = s; *c; c++)
            digits = digits && isdigit((unsigned char) *c);
        if (s[0] == '-')
            lp_err(p, n, "%s: a duration must not be negative, got '%s'", key, s);
        else if (digits)
            lp_err(p, n, "%s: '%s' needs a unit: expected a duration such as %ss or %sms", key, s, s, s);
        else
            lp_err(p, n, "%s: invalid duration '%s': expected a number with a unit (us, ms, s, min, h, d, w), "
                "such as 500ms, 30s, 5min, 1h, 1d", key, s);
        return false;
    }
    *out = v;
    return true;
}

bool lp_get_duration_range(Parser *p, const LayoutNode *n, const char *key, usec_t min, usec_t max,
                               usec_t *out) {
    usec_t v;
    if (!lp_get_duration(p, n, key, &v))
        return false;
    if (v < min || v > max) {
        _cleanup_free_ char *a = NULL, *b = NULL;
        if (layout_format_duration(min, &a) < 0 || layout_format_duration(max, &b) < 0) {
            lp_oom(p);
            return false;
        }
        lp_err(p, n, "%s: must be between %s and %s, got '%s'", key, a, b, n->value);
        return false;
    }
    *out = v;
    return true;
}

bool lp_get_mode(Parser *p, const LayoutNode *n, const char *key, mode_t *out) {
    const char *s = lp_get_scalar(p, n, key, "an octal mode such as \"0750\"");
    if (!s)
        return false;
    size_t len = strlen(s);
    bool ok = len >= 1 && len <= 5;
    unsigned v = 0;
    for (const char *c = s; ok && *c; c++) {
        if (*c < '0' || *c > '7')
            ok = false;
        else
            v = v * 8 + (unsigned) (*c - '0');
    }
    if (!ok || v > 07777) {
        lp_err(p, n, "%s: expected an octal mode such as \"0750\", got '%s'", key, s);
        return false;
    }
    *out = (mode_t) v;
    return true;
}

bool lp_get_enum(Parser *p, const LayoutNode *n, const char *key, const char *const *names, size_t n_names,
                 int *out) {
    /* The list helpers want a NULL-terminated list without holes. */
    _cleanup_free_ const char **known = calloc(n_names + 1, sizeof(*known));
    if (!known) {
        lp_oom(p);
        return false;
    }
    for (size_t i = 0, k = 0; i < n_names; i++)
        if (names[i])
            known[k++] = names[i];
    _cleanup_free_ char *list = lp_join_keys(known);
    if (!list) {
        lp_oom(p);
        return false;
    }
    char expected[256];
    snprintf(expected, sizeof expected, "one of %s", list);
    const char *s = lp_get_scalar(p, n, key, expected);
    if (!s)
        return false;
    for (size_t i = 0; i < n_names; i++)
        if (names[i] && streq(names[i], s)) {
            *out = (int) i;
            return true;
        }
    const char *d = lp_did_you_mean(s, known);
    if (d)
        lp_err(p, n, "%s: unknown value '%s'; did you mean '%s'? (expected one of %s)", key, s, d, list);
    else
        lp_err(p, n, "%s: unknown value '%s'; expected one of %s", key, s, list);
    return false;
}

/* An absolute, normalised path: no "." or ".." components, no empty
 * components except that a trailing slash is dropped. */
bool lp_get_path(Parser *p, const LayoutNode *n, const char *key, char **out) {
    const char *s = lp_get_scalar(p, n, key, "an absolute path");
    if (!s)
        return false;
    if (s[0] != '/') {
        lp_err(p, n, "%s: expected an absolute path (starting with /), got '%s'", key, s);
        return false;
    }
    if (strlen(s) >= 4096) {
        lp_err(p, n, "%s: path too long", key);
        return false;
    }
    _cleanup_free_ char *c = malloc(strlen(s) + 1);
    if (!c) {
        lp_oom(p);
        return false;
    }
    size_t o = 0;
    for (const char *i = s; *i;) {
        while (*i == '/')
            i++;
        if (!*i)
            break;
        const char *e = strchrnul(i, '/');
        size_t l = (size_t) (e - i);
        if ((l == 1 && i[0] == '.') || (l == 2 && i[0] == '.' && i[1] == '.')) {
            lp_err(p, n, "%s: '.' and '..' are not allowed in paths, got '%s'", key, s);
            return false;
        }
        for (const char *x = i; x < e; x++)
            if ((unsigned char) *x < 0x20 || *x == 0x7f) {
                lp_err(p, n, "%s: control characters are not allowed in paths", key);
                return false;
            }
        c[o++] = '/';
        memcpy(c + o, i, l);
        o += l;
        i = e;
    }
    if (o == 0)
        c[o++] = '/';
    c[o] = 0;
    free(*out);
    *out = TAKE_PTR(c);
    return true;
}

/* A list of strings. Each item's problems are reported at the item. */
bool lp_get_strv(Parser *p, const LayoutNode *n, const char *key, char ***out) {
    if (n->invalid)
        return false;
    if (n->type != LAYOUT_NODE_SEQUENCE) {
        lp_err(p, n, "%s: expected a list of strings, got %s", key, lp_node_kind(n));
        return false;
    }
    if (n->n_items > LAYOUT_ITEMS_MAX) {
        lp_err(p, n, "%s: %zu items, more than the %d allowed", key, n->n_items, LAYOUT_ITEMS_MAX);
        return false;
    }
    _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
    if (!l) {
        lp_oom(p);
        return false;
    }
    bool ok = true;
    for (size_t i = 0; i < n->n_items; i++) {
        _cleanup_free_ char *s = NULL;
        if (!lp_get_string(p, n->items[i], key, &s)) {
            ok = false;
            continue;
        }
        if (strv_extend(&l, s) < 0) {
            lp_oom(p);
            return false;
        }
    }
    if (!ok)
        return false;
    strv_free(*out);
    *out = TAKE_PTR(l);
    return true;
}

/* user/group names: what useradd accepts, or a numeric id. */
bool lp_get_account(Parser *p, const LayoutNode *n, const char *key, char **out) {
    const char *s = lp_get_scalar(p, n, key, "a user or group name");
    if (!s)
        return false;
    bool ok = strlen(s) <= 32 && *s;
    for (const char *c = s; ok && *c; c++)
        ok = isalnum((unsigned char) *c) || *c == '_' || *c == '-' || *c == '.' || (*c == '$' && !c[1]);
    if (!ok || s[0] == '-') {
        lp_err(p, n, "%s: invalid name '%s': expected a user/group name ([A-Za-z0-9_.-], at most 32 "
            "characters) or a numeric id", key, s);
        return false;
    }
    return lp_get_string(p, n, key, out);
}
