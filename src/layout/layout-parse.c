/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The layout validator: walks the node tree (layout-node.c) against the
 * schema of docs/layout.md, fills a Layout with normalised values and
 * defaults, and reports every problem it finds with file:line:column.
 * It never stops at the first error: a checker that makes the operator
 * fix one typo per run is a checker nobody likes.
 */
#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>

#include "layout-internal.h"
#include "util.h"

#define DEFAULT_ROOT "/var/lib/layoutd"
#define DEFAULT_COMMAND_0 "/usr/libexec/layoutd/layoutd-wsfs"

#define MAX_VOLUMES 1024
#define MAX_SHARDS 64
#define MAX_WORKSPACES_PER_VOLUME 1024
#define MAX_VOLUME_SIZE (1024 * TIB)
#define MIN_BLOCK_MAP_CACHE (128 * MIB)
#define MAX_STATIC_WORKSPACES 4096
/* sun_path is 108 bytes including the NUL. */
#define SOCKET_PATH_MAX 107

typedef struct Parser {
    const char *name;
    LayoutErrors *errors;
    int oom; /* -ENOMEM once an allocation failed */
} Parser;

/* Every error goes through here; an allocation failure is remembered and
 * turned into -ENOMEM at the end. */
_printf_(3, 4) static void err(Parser *p, const LayoutNode *at, const char *fmt, ...) {
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

static void *oom(Parser *p) {
    p->oom = -ENOMEM;
    return NULL;
}

static char *xstrdup(Parser *p, const char *s) {
    char *c = strdup(s);
    return c ?: oom(p);
}

/* ---- node helpers ---- */

static bool node_is_null(const LayoutNode *n) {
    return n->type == LAYOUT_NODE_SCALAR && n->plain &&
           (isempty(n->value) || STR_IN_SET(n->value, "~", "null", "Null", "NULL"));
}

static const char *node_kind(const LayoutNode *n) {
    if (n->type == LAYOUT_NODE_MAPPING)
        return "a mapping";
    if (n->type == LAYOUT_NODE_SEQUENCE)
        return "a list";
    if (node_is_null(n))
        return "an empty value";
    return "a scalar";
}

/* Key of pair i of a mapping, if it is a usable string. */
static const char *map_key(const LayoutNode *map, size_t i) {
    const LayoutNode *k = map->items[2 * i];
    if (k->type != LAYOUT_NODE_SCALAR || k->invalid)
        return NULL;
    return k->value;
}

static size_t map_pairs(const LayoutNode *map) {
    return map->n_items / 2;
}

/* First value for key, or NULL. Duplicates were reported by map_check(). */
static LayoutNode *map_get(const LayoutNode *map, const char *key, LayoutNode **ret_key) {
    if (!map || map->type != LAYOUT_NODE_MAPPING)
        return NULL;
    for (size_t i = 0; i < map_pairs(map); i++) {
        const char *k = map_key(map, i);
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

static const char *did_you_mean(const char *key, const char *const *known) {
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

static char *join_keys(const char *const *known) {
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
    const char *s = did_you_mean(key->value, known);
    if (s) {
        err(p, key, "unknown key '%s' in %s; did you mean '%s'?", key->value, where, s);
        return;
    }
    _cleanup_free_ char *list = join_keys(known);
    if (!list) {
        oom(p);
        return;
    }
    err(p, key, "unknown key '%s' in %s; expected one of: %s", key->value, where, list);
}

/*
 * Checks that node is a mapping, that its keys are strings, that no key is
 * there twice, and that every key is known. `skip` lists keys the caller
 * reports itself (with a better message than "unknown"). Returns false if
 * node is not a mapping (already reported).
 */
static bool map_check(Parser *p, const LayoutNode *node, const char *const *known, const char *const *skip,
                      const char *where) {
    if (node->invalid)
        return false;
    if (node->type != LAYOUT_NODE_MAPPING) {
        err(p, node, "%s must be a mapping (key: value lines), got %s", where, node_kind(node));
        return false;
    }
    /* The duplicate check is quadratic; no real mapping comes near this. */
    if (map_pairs(node) > LAYOUT_ITEMS_MAX) {
        err(p, node, "%s has %zu keys, more than the %d allowed", where, map_pairs(node), LAYOUT_ITEMS_MAX);
        return false;
    }
    for (size_t i = 0; i < map_pairs(node); i++) {
        const LayoutNode *k = node->items[2 * i];
        if (k->invalid)
            continue;
        if (k->type != LAYOUT_NODE_SCALAR) {
            err(p, k, "keys in %s must be plain strings, got %s", where, node_kind(k));
            continue;
        }
        bool dup = false;
        for (size_t j = 0; j < i && !dup; j++) {
            const char *o = map_key(node, j);
            if (o && streq(o, k->value)) {
                const LayoutNode *first = node->items[2 * j];
                err(p, k, "duplicate key '%s' in %s (first given at line %u, column %u)", k->value, where,
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

static const char *get_scalar(Parser *p, const LayoutNode *n, const char *key, const char *expected) {
    if (n->invalid)
        return NULL;
    if (n->type != LAYOUT_NODE_SCALAR || node_is_null(n)) {
        err(p, n, "%s: expected %s, got %s", key, expected, node_kind(n));
        return NULL;
    }
    return n->value;
}

static bool get_string(Parser *p, const LayoutNode *n, const char *key, char **out) {
    const char *s = get_scalar(p, n, key, "a string");
    if (!s)
        return false;
    for (const char *c = s; *c; c++)
        if ((unsigned char) *c < 0x20 || *c == 0x7f) {
            err(p, n, "%s: control characters (such as newlines) are not allowed", key);
            return false;
        }
    char *c = xstrdup(p, s);
    if (!c)
        return false;
    free(*out);
    *out = c;
    return true;
}

static bool get_bool(Parser *p, const LayoutNode *n, const char *key, bool *out) {
    const char *s = get_scalar(p, n, key, "true or false");
    if (!s)
        return false;
    if (STR_IN_SET(s, "true", "True", "TRUE")) {
        *out = true;
        return true;
    }
    if (STR_IN_SET(s, "false", "False", "FALSE")) {
        *out = false;
        return true;
    }
    if (STR_IN_SET(s, "yes", "no", "on", "off", "y", "n", "Yes", "No", "On", "Off", "1", "0"))
        err(p, n, "%s: expected true or false, got '%s' (YAML 1.1 and 1.2 read it differently; "
            "write true or false)", key, s);
    else
        err(p, n, "%s: expected true or false, got '%s'", key, s);
    return false;
}

static bool get_uint(Parser *p, const LayoutNode *n, const char *key, uint64_t min, uint64_t max, uint64_t *out) {
    const char *s = get_scalar(p, n, key, "a whole number");
    if (!s)
        return false;
    if (s[0] == '-') {
        err(p, n, "%s: must not be negative, got %s", key, s);
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
            err(p, n, "%s: number too large, expected %" PRIu64 "..%" PRIu64, key, min, max);
            return false;
        }
        v = v * 10 + d;
    }
    if (v < min || v > max) {
        err(p, n, "%s: must be between %" PRIu64 " and %" PRIu64 ", got %" PRIu64, key, min, max, v);
        return false;
    }
    *out = v;
    return true;
bad:
    err(p, n, "%s: expected a whole number (%" PRIu64 "..%" PRIu64 "), got '%s'", key, min, max, s);
    return false;
}

static bool get_unsigned(Parser *p, const LayoutNode *n, const char *key, unsigned min, unsigned max,
                         unsigned *out) {
    uint64_t v;
    if (!get_uint(p, n, key, min, max, &v))
        return false;
    *out = (unsigned) v;
    return true;
}

static bool get_size(Parser *p, const LayoutNode *n, const char *key, uint64_t *out) {
    const char *s = get_scalar(p, n, key, "a size such as 512MiB or 4G");
    if (!s)
        return false;
    uint64_t v;
    int r = layout_parse_size(s, &v);
    if (r == -ERANGE) {
        err(p, n, "%s: size '%s' is too large", key, s);
        return false;
    }
    if (r < 0) {
        const char *u = s;
        while (*u == '-' || isdigit((unsigned char) *u) || *u == ' ')
            u++;
        if (s[0] == '-')
            err(p, n, "%s: a size must not be negative, got '%s'", key, s);
        else if (STR_IN_SET(u, "KB", "MB", "GB", "TB", "kB", "kb", "mb", "gb", "tb"))
            err(p, n, "%s: '%s' is ambiguous (1000 or 1024?); use %.1siB (binary) or %.1s", key, u,
                u[0] == 'k' ? "K" : u, u[0] == 'k' ? "K" : u);
        else
            err(p, n, "%s: invalid size '%s': expected a whole number of bytes, optionally followed by "
                "one of KiB, MiB, GiB, TiB (or K, M, G, T; all binary)", key, s);
        return false;
    }
    *out = v;
    return true;
}

static bool get_duration(Parser *p, const LayoutNode *n, const char *key, usec_t *out) {
    const char *s = get_scalar(p, n, key, "a duration such as 500ms, 30s, 5min, 1h or 1d");
    if (!s)
        return false;
    usec_t v;
    int r = layout_parse_duration(s, &v);
    if (r == -ERANGE) {
        err(p, n, "%s: duration '%s' is too large", key, s);
        return false;
    }
    if (r < 0) {
        bool digits = *s != 0;
        for (const char *c = s; *c; c++)
            digits = digits && isdigit((unsigned char) *c);
        if (s[0] == '-')
            err(p, n, "%s: a duration must not be negative, got '%s'", key, s);
        else if (digits)
            err(p, n, "%s: '%s' needs a unit: expected a duration such as %ss or %sms", key, s, s, s);
        else
            err(p, n, "%s: invalid duration '%s': expected a number with a unit (us, ms, s, min, h, d, w), "
                "such as 500ms, 30s, 5min, 1h, 1d", key, s);
        return false;
    }
    *out = v;
    return true;
}

static bool get_duration_range(Parser *p, const LayoutNode *n, const char *key, usec_t min, usec_t max,
                               usec_t *out) {
    usec_t v;
    if (!get_duration(p, n, key, &v))
        return false;
    if (v < min || v > max) {
        _cleanup_free_ char *a = NULL, *b = NULL;
        if (layout_format_duration(min, &a) < 0 || layout_format_duration(max, &b) < 0) {
            oom(p);
            return false;
        }
        err(p, n, "%s: must be between %s and %s, got '%s'", key, a, b, n->value);
        return false;
    }
    *out = v;
    return true;
}

static bool get_mode(Parser *p, const LayoutNode *n, const char *key, mode_t *out) {
    const char *s = get_scalar(p, n, key, "an octal mode such as \"0750\"");
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
        err(p, n, "%s: expected an octal mode such as \"0750\", got '%s'", key, s);
        return false;
    }
    *out = (mode_t) v;
    return true;
}

static bool get_enum(Parser *p, const LayoutNode *n, const char *key, const char *const *names, int *out) {
    _cleanup_free_ char *list = join_keys(names);
    if (!list) {
        oom(p);
        return false;
    }
    char expected[256];
    snprintf(expected, sizeof expected, "one of %s", list);
    const char *s = get_scalar(p, n, key, expected);
    if (!s)
        return false;
    for (int i = 0; names[i]; i++)
        if (streq(names[i], s)) {
            *out = i;
            return true;
        }
    const char *d = did_you_mean(s, names);
    if (d)
        err(p, n, "%s: unknown value '%s'; did you mean '%s'? (expected one of %s)", key, s, d, list);
    else
        err(p, n, "%s: unknown value '%s'; expected one of %s", key, s, list);
    return false;
}

/* An absolute, normalised path: no "." or ".." components, no empty
 * components except that a trailing slash is dropped. */
static bool get_path(Parser *p, const LayoutNode *n, const char *key, char **out) {
    const char *s = get_scalar(p, n, key, "an absolute path");
    if (!s)
        return false;
    if (s[0] != '/') {
        err(p, n, "%s: expected an absolute path (starting with /), got '%s'", key, s);
        return false;
    }
    if (strlen(s) >= 4096) {
        err(p, n, "%s: path too long", key);
        return false;
    }
    _cleanup_free_ char *c = malloc(strlen(s) + 1);
    if (!c) {
        oom(p);
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
            err(p, n, "%s: '.' and '..' are not allowed in paths, got '%s'", key, s);
            return false;
        }
        for (const char *x = i; x < e; x++)
            if ((unsigned char) *x < 0x20 || *x == 0x7f) {
                err(p, n, "%s: control characters are not allowed in paths", key);
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
static bool get_strv(Parser *p, const LayoutNode *n, const char *key, char ***out) {
    if (n->invalid)
        return false;
    if (n->type != LAYOUT_NODE_SEQUENCE) {
        err(p, n, "%s: expected a list of strings, got %s", key, node_kind(n));
        return false;
    }
    if (n->n_items > LAYOUT_ITEMS_MAX) {
        err(p, n, "%s: %zu items, more than the %d allowed", key, n->n_items, LAYOUT_ITEMS_MAX);
        return false;
    }
    _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
    if (!l) {
        oom(p);
        return false;
    }
    bool ok = true;
    for (size_t i = 0; i < n->n_items; i++) {
        _cleanup_free_ char *s = NULL;
        if (!get_string(p, n->items[i], key, &s)) {
            ok = false;
            continue;
        }
        if (strv_extend(&l, s) < 0) {
            oom(p);
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
static bool get_account(Parser *p, const LayoutNode *n, const char *key, char **out) {
    const char *s = get_scalar(p, n, key, "a user or group name");
    if (!s)
        return false;
    bool ok = strlen(s) <= 32 && *s;
    for (const char *c = s; ok && *c; c++)
        ok = isalnum((unsigned char) *c) || *c == '_' || *c == '-' || *c == '.' || (*c == '$' && !c[1]);
    if (!ok || s[0] == '-') {
        err(p, n, "%s: invalid name '%s': expected a user/group name ([A-Za-z0-9_.-], at most 32 "
            "characters) or a numeric id", key, s);
        return false;
    }
    return get_string(p, n, key, out);
}

/* ---- pools ---- */

static const char *const pool_keys[] = {
    "backend", "volume_size", "min_volumes", "max_volumes", "workspaces_per_volume", "direct_io",
    "writeback", "mkfs_options", "mount_options", "placement", "tenant_isolation", "workspace_reserve",
    "workspace_reserve_inodes", "shards", "vdo", NULL,
};
static const char *const vdo_keys[] = {
    "logical_size", "compression", "deduplication", "fstrim_interval", "block_map_cache", "device", NULL,
};
static const char *const writeback_keys[] = { "max_ratio", "max_bytes", "strict_limit", NULL };
/* Keys that only make sense where workspaces are placed. */
static const char *const state_only_keys[] = {
    "workspaces_per_volume", "placement", "tenant_isolation", "workspace_reserve", "workspace_reserve_inodes", NULL,
};
static const char *const backend_names[] = { "loop-ext4", "loop-xfs", "vdo-xfs", "dir", NULL };
static const char *const placement_names[] = { "spread", "pack", NULL };
static const char *const restart_names[] = { "always", "on-failure", "never", NULL };

static void pool_defaults(Pool *pool, PoolRole role) {
    *pool = (Pool) {
        .role = role,
        .backend = BACKEND_LOOP_EXT4,
        .volume_size = role == POOL_STATE ? GIB : 4 * GIB,
        .min_volumes = 1,
        .max_volumes = role == POOL_STATE ? 16 : 1,
        .workspaces_per_volume = role == POOL_STATE ? 4 : 0,
        .direct_io = true,
        .writeback = { .max_ratio = -1, .max_bytes = 0, .strict_limit = -1 },
        .placement = PLACEMENT_SPREAD,
        .workspace_reserve = role == POOL_STATE ? 64 * MIB : 0,
        .workspace_reserve_inodes = role == POOL_STATE ? 4096 : 0,
        .shards = 1,
    };
}

static void parse_writeback(Parser *p, const LayoutNode *n, WritebackLimits *wb) {
    if (!map_check(p, n, writeback_keys, NULL, "writeback"))
        return;
    LayoutNode *v;
    uint64_t u;
    bool b;
    if ((v = map_get(n, "max_ratio", NULL)) && get_uint(p, v, "writeback.max_ratio", 0, 100, &u))
        wb->max_ratio = (int) u;
    if ((v = map_get(n, "max_bytes", NULL)))
        (void) get_size(p, v, "writeback.max_bytes", &wb->max_bytes);
    if ((v = map_get(n, "strict_limit", NULL)) && get_bool(p, v, "writeback.strict_limit", &b))
        wb->strict_limit = b;
}

static void parse_vdo(Parser *p, const LayoutNode *n, Pool *pool, bool *ret_logical_given) {
    if (!map_check(p, n, vdo_keys, NULL, "vdo"))
        return;
    LayoutNode *v, *k;
    VdoOptions *o = &pool->vdo;
    if ((v = map_get(n, "logical_size", NULL)) && get_size(p, v, "vdo.logical_size", &o->logical_size)) {
        *ret_logical_given = true;
        if (o->logical_size % (4 * KIB) != 0)
            err(p, v, "vdo.logical_size: must be a multiple of 4 KiB, got %s", v->value);
        else if (o->logical_size > MAX_VOLUME_SIZE)
            err(p, v, "vdo.logical_size: must be at most 1024TiB");
    }
    if ((v = map_get(n, "compression", NULL)))
        (void) get_bool(p, v, "vdo.compression", &o->compression);
    if ((v = map_get(n, "deduplication", NULL)))
        (void) get_bool(p, v, "vdo.deduplication", &o->deduplication);
    if ((v = map_get(n, "fstrim_interval", NULL))) {
        usec_t t;
        /* Online discard stalls XFS on VDO (dm-vdo/vdo#57); a periodic
         * fstrim is the advice, but not so often that it is the load. */
        if (get_duration(p, v, "vdo.fstrim_interval", &t)) {
            if (t != 0 && t < 60 * USEC_PER_SEC)
                err(p, v, "vdo.fstrim_interval: must be 0 (off) or at least 1min, got '%s'", v->value);
            else
                o->fstrim_interval = t;
        }
    }
    if ((v = map_get(n, "block_map_cache", NULL)) && get_size(p, v, "vdo.block_map_cache", &o->block_map_cache)) {
        if (o->block_map_cache < MIN_BLOCK_MAP_CACHE)
            err(p, v, "vdo.block_map_cache: must be at least 128MiB (the dm-vdo minimum), got %s", v->value);
        else if (o->block_map_cache % (4 * KIB) != 0)
            err(p, v, "vdo.block_map_cache: must be a multiple of 4 KiB, got %s", v->value);
    }
    if ((v = map_get(n, "device", &k)) && get_path(p, v, "vdo.device", &o->device)) {
        if (strncmp(o->device, "/dev/", 5) != 0)
            err(p, v, "vdo.device: expected a block device below /dev/, got '%s'", o->device);
    }
}

static void parse_pool(Parser *p, const LayoutNode *n, PoolRole role, Pool *pool) {
    char where[64];
    snprintf(where, sizeof where, "pool '%s'", pool_role_to_string(role));
    pool->declared = true;

    /* vdo keys directly under the pool are reported below with a hint. */
    if (!map_check(p, n, pool_keys, vdo_keys, where))
        return;

    LayoutNode *v, *k;
    bool backend_ok = true;
    int e;
    if ((v = map_get(n, "backend", NULL))) {
        backend_ok = get_enum(p, v, "backend", backend_names, &e);
        if (backend_ok)
            pool->backend = (Backend) e;
    }
    const Backend b = pool->backend;
    const char *bname = backend_to_string(b);
    const BackendTraits *traits = backend_ok ? backend_traits(b) : NULL;
    const bool is_dir = traits && !traits->has_device;
    const bool is_vdo = traits && traits->takes_vdo;

    if (is_dir) {
        pool->direct_io = false;
        pool->volume_size = 0;
    }
    if (is_vdo) {
        pool->has_vdo = true;
        pool->vdo = (VdoOptions) {
            .compression = true,
            .deduplication = true,
            .fstrim_interval = 86400 * USEC_PER_SEC,
            .block_map_cache = 128 * MIB,
        };
    }

    /* Keys the role does not have. */
    for (size_t i = 0; i < map_pairs(n); i++) {
        const char *key = map_key(n, i);
        const LayoutNode *kn = n->items[2 * i];
        if (!key)
            continue;
        if (role == POOL_CONTENT && strv_contains(state_only_keys, key))
            err(p, kn, "'%s' applies to the state pool only: the content pool is shared by every workspace "
                "and nothing is placed on it", key);
        if (role == POOL_STATE && streq(key, "shards"))
            err(p, kn, "'shards' applies to the content pool only; the state pool grows by volumes "
                "(min_volumes/max_volumes)");
        if (strv_contains(vdo_keys, key)) {
            if (is_vdo)
                err(p, kn, "'%s' is a VDO option: it belongs under 'vdo:' of this pool", key);
            else
                err(p, kn, "'%s' is a VDO option: it belongs under 'vdo:' of a pool with backend vdo-xfs "
                    "(this pool's backend is %s)", key, backend_ok ? bname : "invalid");
        }
    }

    bool size_given = false;
    if ((v = map_get(n, "volume_size", &k))) {
        if (is_dir)
            err(p, k, "volume_size has no meaning for backend dir: a dir volume is a plain directory "
                "with no size of its own; remove the key");
        else if (get_size(p, v, "volume_size", &pool->volume_size)) {
            size_given = true;
            if (pool->volume_size % (4 * KIB) != 0) {
                err(p, v, "volume_size: must be a multiple of 4 KiB, got %s", v->value);
                size_given = false;
            } else if (pool->volume_size > MAX_VOLUME_SIZE) {
                err(p, v, "volume_size: must be at most 1024TiB, got %s", v->value);
                size_given = false;
            }
        }
    }
    if (traits && traits->has_device) {
        if (pool->volume_size < traits->min_volume_size && (size_given || !v))
            err(p, v ?: n, "volume_size: %s needs at least %s per volume, got %s", traits->fs_name,
                traits->min_volume_size_text, v ? v->value : "the default");
    }

    LayoutNode *minv = map_get(n, "min_volumes", NULL), *maxv = map_get(n, "max_volumes", NULL);
    bool min_ok = true, max_ok = true;
    if (minv)
        min_ok = get_unsigned(p, minv, "min_volumes", 0, MAX_VOLUMES, &pool->min_volumes);
    if (maxv)
        max_ok = get_unsigned(p, maxv, "max_volumes", 1, MAX_VOLUMES, &pool->max_volumes);

    if (role == POOL_STATE && (v = map_get(n, "workspaces_per_volume", NULL)))
        (void) get_unsigned(p, v, "workspaces_per_volume", 1, MAX_WORKSPACES_PER_VOLUME,
                            &pool->workspaces_per_volume);

    if ((v = map_get(n, "direct_io", &k))) {
        bool d;
        if (get_bool(p, v, "direct_io", &d)) {
            if (is_dir && d)
                err(p, v, "direct_io: the dir backend has no loop device, so direct I/O cannot be turned "
                    "on; remove the key or set it to false");
            else
                pool->direct_io = d;
        }
    }
    if ((v = map_get(n, "writeback", &k))) {
        if (is_dir)
            err(p, k, "writeback limits need a loop device of the volume's own; backend dir has none");
        else
            parse_writeback(p, v, &pool->writeback);
    }
    if ((v = map_get(n, "mkfs_options", &k))) {
        if (is_dir)
            err(p, k, "mkfs_options: backend dir makes no filesystem; remove the key");
        else
            (void) get_strv(p, v, "mkfs_options", &pool->mkfs_options);
    }
    if ((v = map_get(n, "mount_options", &k))) {
        if (is_dir)
            err(p, k, "mount_options: backend dir mounts nothing; remove the key");
        else if (get_string(p, v, "mount_options", &pool->mount_options)) {
            if (strpbrk(pool->mount_options, " \t"))
                err(p, v, "mount_options: expected a comma-separated list without spaces, got '%s'",
                    pool->mount_options);
            /* Online discard stalls XFS on VDO; the periodic fstrim does it. */
            else if (is_vdo && (streq(pool->mount_options, "discard") ||
                                strstr(pool->mount_options, "discard,") == pool->mount_options ||
                                strstr(pool->mount_options, ",discard")))
                err(p, v, "mount_options: 'discard' on XFS over VDO stalls all I/O during deletes; use "
                    "vdo.fstrim_interval instead");
        }
    }
    if (role == POOL_STATE) {
        if ((v = map_get(n, "placement", NULL)) && get_enum(p, v, "placement", placement_names, &e))
            pool->placement = (PlacementPolicy) e;
        if ((v = map_get(n, "tenant_isolation", NULL)))
            (void) get_bool(p, v, "tenant_isolation", &pool->tenant_isolation);
        if ((v = map_get(n, "workspace_reserve", NULL)) &&
            get_size(p, v, "workspace_reserve", &pool->workspace_reserve) && backend_ok && !is_dir &&
            pool->workspace_reserve > pool->volume_size)
            err(p, v, "workspace_reserve: %s is more than the volume_size; no workspace would fit", v->value);
        if ((v = map_get(n, "workspace_reserve_inodes", NULL)))
            (void) get_uint(p, v, "workspace_reserve_inodes", 0, UINT32_MAX, &pool->workspace_reserve_inodes);
    }

    if (role == POOL_CONTENT) {
        bool shards_ok = true;
        if ((v = map_get(n, "shards", NULL)))
            shards_ok = get_unsigned(p, v, "shards", 1, MAX_SHARDS, &pool->shards);
        /* One volume per shard, always: shard i lives on content-i, and a
         * workspace's daemon is handed all of them. */
        if (shards_ok) {
            if (minv && min_ok && pool->min_volumes != pool->shards)
                err(p, minv, "min_volumes: the content pool has exactly one volume per shard, so min_volumes "
                    "must equal shards (%u); remove the key", pool->shards);
            if (maxv && max_ok && pool->max_volumes != pool->shards)
                err(p, maxv, "max_volumes: the content pool has exactly one volume per shard, so max_volumes "
                    "must equal shards (%u); remove the key", pool->shards);
        }
        pool->min_volumes = pool->max_volumes = pool->shards;
    } else if (minv && maxv && min_ok && max_ok && pool->min_volumes > pool->max_volumes)
        err(p, minv, "min_volumes (%u) must not be more than max_volumes (%u)", pool->min_volumes,
            pool->max_volumes);
    else if (minv && !maxv && min_ok && pool->min_volumes > pool->max_volumes)
        pool->max_volumes = pool->min_volumes; /* the default bound grows with an explicit minimum */

    LayoutNode *vk = NULL;
    bool logical_given = false;
    if ((v = map_get(n, "vdo", &vk))) {
        if (!is_vdo) {
            if (backend_ok)
                err(p, vk, "'vdo:' applies only to backend vdo-xfs (this pool's backend is %s)", bname);
        } else
            parse_vdo(p, v, pool, &logical_given);
    }
    if (is_vdo) {
        VdoOptions *o = &pool->vdo;
        if (!logical_given) {
            /* Deduplication is why one picks VDO: present 3x the physical
             * size by default, the ratio seen on dependency trees. */
            o->logical_size = pool->volume_size * 3;
        } else if (o->logical_size < pool->volume_size) {
            LayoutNode *lv = map_get(v, "logical_size", NULL);
            err(p, lv, "vdo.logical_size (%s) must be at least volume_size (%s)", lv->value,
                map_get(n, "volume_size", NULL) ? map_get(n, "volume_size", NULL)->value : "the default");
        }
        if (o->device && pool->max_volumes != 1)
            err(p, map_get(v, "device", NULL),
                "vdo.device: a block device holds exactly one volume, but this pool may have %u "
                "(set %s to 1)", pool->max_volumes, role == POOL_CONTENT ? "shards" : "max_volumes");
    }
}

static void parse_pools(Parser *p, const LayoutNode *n, const LayoutNode *key, Layout *l) {
    static const char *const roles[] = { "state", "content", NULL };
    if (!map_check(p, n, roles, NULL, "pools"))
        return;
    for (PoolRole r = 0; r < _POOL_ROLE_MAX; r++) {
        LayoutNode *v = map_get(n, pool_role_to_string(r), NULL);
        if (v)
            parse_pool(p, v, r, &l->pools[r]);
    }
    if (!l->pools[POOL_STATE].declared)
        err(p, key, "pools: the state pool must be declared (pools: {state: {...}})");
}

/* ---- workspace ---- */

static const char *const workspace_keys[] = {
    "mount_root", "command", "user", "group", "environment", "dir_mode", "restart", "backoff", "crash_loop",
    "ready_timeout", "stop_timeout", "hang_timeout", "restart_on_hang", "workspaces", NULL,
};

/* The same grammar as the expansion in src/supervise/argv.c: "{name}" is a
 * placeholder, "{{" and "}}" are literal braces, a lone "}" is a typo.
 * Returns false if the element has a problem (reported). */
static bool check_placeholders(Parser *p, const LayoutNode *n, const char *arg, bool allowed) {
    for (const char *c = arg; *c;) {
        if ((c[0] == '{' && c[1] == '{') || (c[0] == '}' && c[1] == '}')) {
            c += 2;
            continue;
        }
        if (c[0] == '}') {
            err(p, n, "command: stray '}' in '%s' (write '}}' for a literal brace)", arg);
            return false;
        }
        if (c[0] != '{') {
            c++;
            continue;
        }
        const char *e = strchr(c + 1, '}');
        if (!e) {
            err(p, n, "command: unterminated placeholder in '%s': expected {name} (write '{{' for a literal "
                "brace)", arg);
            return false;
        }
        if (!allowed) {
            err(p, n, "command[0]: placeholders are not allowed in the program path");
            return false;
        }
        size_t l = (size_t) (e - c - 1);
        char name[32];
        if (l >= sizeof name) {
            err(p, n, "command: unknown placeholder '%.*s' in '%s'", 40, c, arg);
            return false;
        }
        memcpy(name, c + 1, l);
        name[l] = 0;
        if (!strv_contains(layout_placeholders, name)) {
            _cleanup_free_ char *list = join_keys(layout_placeholders);
            const char *d = did_you_mean(name, layout_placeholders);
            if (!list)
                oom(p);
            else if (d)
                err(p, n, "command: unknown placeholder '{%s}'; did you mean '{%s}'? (known: %s)", name, d, list);
            else
                err(p, n, "command: unknown placeholder '{%s}'; known placeholders: %s", name, list);
            return false;
        }
        c = e + 1;
    }
    return true;
}

static void parse_command(Parser *p, const LayoutNode *n, const LayoutNode *key, WorkspaceConfig *w) {
    if (n->invalid)
        return;
    if (n->type != LAYOUT_NODE_SEQUENCE) {
        err(p, n, "command: expected a list (the argv, e.g. [\"/usr/bin/daemon\", \"{mountpoint}\"]), "
            "got %s; a command is never a shell string", node_kind(n));
        return;
    }
    if (n->n_items == 0) {
        err(p, n, "command: must not be empty; command[0] is the absolute path of the daemon");
        return;
    }
    char **argv = NULL;
    if (!get_strv(p, n, "command", &argv))
        return;
    bool ok = true;
    if (argv[0][0] != '/') {
        err(p, n->items[0], "command[0]: must be an absolute path (the daemon is not looked up in $PATH), "
            "got '%s'", argv[0]);
        ok = false;
    } else if (!check_placeholders(p, n->items[0], argv[0], false))
        ok = false;
    for (size_t i = 1; argv[i]; i++)
        if (!check_placeholders(p, n->items[i], argv[i], true))
            ok = false;
    if (!ok) {
        strv_free(argv);
        return;
    }
    strv_free(w->command);
    w->command = argv;
}

static bool env_name_is_valid(const char *s) {
    if (!s || !(isalpha((unsigned char) *s) || *s == '_'))
        return false;
    for (; *s; s++)
        if (!(isalnum((unsigned char) *s) || *s == '_'))
            return false;
    return true;
}

static void parse_environment(Parser *p, const LayoutNode *n, WorkspaceConfig *w) {
    if (!map_check(p, n, NULL, NULL, "environment"))
        return;
    for (size_t i = 0; i < map_pairs(n); i++) {
        const char *key = map_key(n, i);
        LayoutNode *kn = n->items[2 * i], *vn = n->items[2 * i + 1];
        if (!key)
            continue;
        /* Skip duplicates: map_check reported them. */
        if (map_get(n, key, NULL) != vn)
            continue;
        if (!env_name_is_valid(key)) {
            err(p, kn, "environment: invalid variable name '%s': expected [A-Za-z_][A-Za-z0-9_]*", key);
            continue;
        }
        _cleanup_free_ char *val = NULL, *kv = NULL;
        if (!get_string(p, vn, key, &val))
            continue;
        if (asprintf(&kv, "%s=%s", key, val) < 0 || strv_extend(&w->environment, kv) < 0) {
            kv = NULL;
            oom(p);
            return;
        }
    }
}

static void parse_static_workspaces(Parser *p, const LayoutNode *n, WorkspaceConfig *w) {
    static const char *const keys[] = { "id", "tenant", "quota", NULL };
    if (n->invalid)
        return;
    if (n->type != LAYOUT_NODE_SEQUENCE) {
        err(p, n, "workspaces: expected a list of {id, tenant} mappings, got %s", node_kind(n));
        return;
    }
    if (n->n_items > MAX_STATIC_WORKSPACES) {
        err(p, n, "workspaces: at most %d static workspaces", MAX_STATIC_WORKSPACES);
        return;
    }
    w->static_workspaces = calloc(MAX(n->n_items, (size_t) 1), sizeof(StaticWorkspace));
    if (!w->static_workspaces) {
        oom(p);
        return;
    }
    /* Every id seen, valid or not, so that a duplicate is reported even
     * when the first occurrence had another problem. */
    const LayoutNode *ids[MAX_STATIC_WORKSPACES];
    size_t n_ids = 0;
    for (size_t i = 0; i < n->n_items; i++) {
        const LayoutNode *item = n->items[i];
        if (!map_check(p, item, keys, NULL, "a static workspace"))
            continue;
        StaticWorkspace *s = &w->static_workspaces[w->n_static_workspaces];
        LayoutNode *v, *k;
        bool ok = true;

        if (!(v = map_get(item, "id", NULL))) {
            err(p, item, "a static workspace needs an 'id'");
            ok = false;
        } else if (get_string(p, v, "id", &s->id)) {
            if (!layout_name_is_valid(s->id, LAYOUT_WORKSPACE_ID_MAX)) {
                err(p, v, "id: invalid workspace id '%s': expected [a-z0-9][a-z0-9-]*, at most %d characters",
                    s->id, LAYOUT_WORKSPACE_ID_MAX);
                ok = false;
            }
            for (size_t j = 0; j < n_ids; j++)
                if (streq(ids[j]->value, s->id)) {
                    err(p, v, "id: duplicate workspace id '%s' (first given at line %u, column %u)", s->id,
                        ids[j]->line, ids[j]->column);
                    ok = false;
                    break;
                }
            ids[n_ids++] = v;
        } else
            ok = false;

        if ((v = map_get(item, "tenant", NULL)) && get_string(p, v, "tenant", &s->tenant) &&
            !layout_name_is_valid(s->tenant, LAYOUT_NAME_MAX)) {
            err(p, v, "tenant: invalid tenant name '%s': expected [a-z0-9][a-z0-9-]*, at most %d characters",
                s->tenant, LAYOUT_NAME_MAX);
            ok = false;
        }
        if ((v = map_get(item, "quota", &k)) && get_size(p, v, "quota", &s->quota) && s->quota != 0) {
            /* Needs project quotas, which the volumes engine does not
             * do in v1; accepting the key would promise a limit that
             * nothing enforces. */
            err(p, k, "quota: per-workspace quotas are not supported in v1 (no project quota support); "
                "remove the key");
            ok = false;
        }
        if (!ok) {
            free(s->id);
            free(s->tenant);
            *s = (StaticWorkspace) {};
            continue;
        }
        w->n_static_workspaces++;
    }
}

static void parse_workspace(Parser *p, const LayoutNode *n, Layout *l) {
    static const char *const backoff_keys[] = { "initial", "max", "reset_after", NULL };
    static const char *const crash_keys[] = { "deaths", "interval", NULL };
    WorkspaceConfig *w = &l->workspace;

    if (!map_check(p, n, workspace_keys, NULL, "workspace"))
        return;
    LayoutNode *v, *k;
    int e;
    if ((v = map_get(n, "mount_root", NULL)) && get_path(p, v, "mount_root", &w->mount_root))
        w->mount_root_is_default = false;
    if ((v = map_get(n, "command", &k)))
        parse_command(p, v, k, w);
    if ((v = map_get(n, "user", NULL)))
        (void) get_account(p, v, "user", &w->user);
    if ((v = map_get(n, "group", NULL)))
        (void) get_account(p, v, "group", &w->group);
    if ((v = map_get(n, "environment", NULL)))
        parse_environment(p, v, w);
    if ((v = map_get(n, "dir_mode", NULL)))
        (void) get_mode(p, v, "dir_mode", &w->dir_mode);
    if ((v = map_get(n, "restart", NULL)) && get_enum(p, v, "restart", restart_names, &e))
        w->restart = (RestartPolicy) e;
    if ((v = map_get(n, "backoff", NULL)) && map_check(p, v, backoff_keys, NULL, "backoff")) {
        LayoutNode *i = map_get(v, "initial", NULL), *m = map_get(v, "max", NULL), *r;
        bool i_ok = !i || get_duration_range(p, i, "backoff.initial", 100 * USEC_PER_MSEC, 86400 * USEC_PER_SEC,
                                             &w->backoff_initial);
        bool m_ok = !m || get_duration_range(p, m, "backoff.max", 100 * USEC_PER_MSEC, 86400 * USEC_PER_SEC,
                                             &w->backoff_max);
        if (i_ok && m_ok && w->backoff_initial > w->backoff_max) {
            if (m)
                err(p, i ?: m, "backoff: initial (%s) must not be more than max (%s)",
                    i ? i->value : "the default 1s", m->value);
            else /* an explicit initial above the default max raises max */
                w->backoff_max = w->backoff_initial;
        }
        if ((r = map_get(v, "reset_after", NULL)))
            (void) get_duration_range(p, r, "backoff.reset_after", USEC_PER_SEC, 7 * 86400 * USEC_PER_SEC,
                                      &w->backoff_reset_after);
    }
    if ((v = map_get(n, "crash_loop", NULL)) && map_check(p, v, crash_keys, NULL, "crash_loop")) {
        LayoutNode *d = map_get(v, "deaths", NULL), *i = map_get(v, "interval", NULL);
        if (d)
            (void) get_unsigned(p, d, "crash_loop.deaths", 1, 1000, &w->crashloop_deaths);
        if (i)
            (void) get_duration_range(p, i, "crash_loop.interval", USEC_PER_SEC, 7 * 86400 * USEC_PER_SEC,
                                      &w->crashloop_interval);
    }
    if ((v = map_get(n, "ready_timeout", NULL)))
        (void) get_duration_range(p, v, "ready_timeout", USEC_PER_MSEC, 3600 * USEC_PER_SEC, &w->ready_timeout);
    if ((v = map_get(n, "stop_timeout", NULL)))
        (void) get_duration_range(p, v, "stop_timeout", USEC_PER_MSEC, 3600 * USEC_PER_SEC, &w->stop_timeout);
    if ((v = map_get(n, "hang_timeout", NULL)))
        (void) get_duration_range(p, v, "hang_timeout", 0, 86400 * USEC_PER_SEC, &w->hang_timeout);
    LayoutNode *rk = NULL;
    if ((v = map_get(n, "restart_on_hang", &rk)) && get_bool(p, v, "restart_on_hang", &w->restart_on_hang) &&
        w->restart_on_hang && w->hang_timeout == 0)
        err(p, v, "restart_on_hang: needs a hang_timeout other than 0 (0 turns the hang watch off)");
    if ((v = map_get(n, "workspaces", NULL)))
        parse_static_workspaces(p, v, w);
}

/* ---- api ---- */

static void parse_api(Parser *p, const LayoutNode *n, ApiConfig *a) {
    static const char *const keys[] = {
        "socket", "group", "socket_mode", "flush_probe_interval", "max_connections", "max_body",
        "request_timeout", NULL,
    };
    if (!map_check(p, n, keys, NULL, "api"))
        return;
    LayoutNode *v;
    if ((v = map_get(n, "socket", NULL)) && get_path(p, v, "socket", &a->socket_path) &&
        strlen(a->socket_path) > SOCKET_PATH_MAX)
        err(p, v, "socket: a Unix socket path can be at most %d bytes long", SOCKET_PATH_MAX);
    if ((v = map_get(n, "group", NULL)))
        (void) get_account(p, v, "group", &a->socket_group);
    if ((v = map_get(n, "socket_mode", NULL)))
        (void) get_mode(p, v, "socket_mode", &a->socket_mode);
    if ((v = map_get(n, "flush_probe_interval", NULL))) {
        usec_t t;
        if (get_duration(p, v, "flush_probe_interval", &t)) {
            if (t != 0 && t < USEC_PER_SEC)
                err(p, v, "flush_probe_interval: must be 0 (off) or at least 1s, got '%s'", v->value);
            else
                a->flush_probe_interval = t;
        }
    }
    if ((v = map_get(n, "max_connections", NULL)))
        (void) get_unsigned(p, v, "max_connections", 1, 65536, &a->max_connections);
    if ((v = map_get(n, "max_body", NULL)) && get_size(p, v, "max_body", &a->max_body) &&
        (a->max_body < KIB || a->max_body > 64 * MIB))
        err(p, v, "max_body: must be between 1KiB and 64MiB, got %s", v->value);
    if ((v = map_get(n, "request_timeout", NULL)))
        (void) get_duration_range(p, v, "request_timeout", USEC_PER_MSEC, 3600 * USEC_PER_SEC,
                                  &a->request_timeout);
}

/* ---- top level ---- */

static int layout_new_defaults(const char *name, Layout **ret) {
    _cleanup_(layout_freep) Layout *l = calloc(1, sizeof(Layout));
    if (!l)
        return -ENOMEM;
    l->version = LAYOUT_VERSION;
    for (PoolRole r = 0; r < _POOL_ROLE_MAX; r++)
        pool_defaults(&l->pools[r], r);
    WorkspaceConfig *w = &l->workspace;
    *w = (WorkspaceConfig) {
        .dir_mode = 0750,
        .restart = RESTART_ON_FAILURE,
        .backoff_initial = USEC_PER_SEC,
        .backoff_max = 60 * USEC_PER_SEC,
        .backoff_reset_after = 120 * USEC_PER_SEC,
        .crashloop_deaths = 5,
        .crashloop_interval = 300 * USEC_PER_SEC,
        .ready_timeout = 10 * USEC_PER_SEC,
        .stop_timeout = 10 * USEC_PER_SEC,
        .hang_timeout = 120 * USEC_PER_SEC,
        .mount_root_is_default = true,
    };
    l->api = (ApiConfig) {
        .socket_mode = 0660,
        .flush_probe_interval = 30 * USEC_PER_SEC,
        .max_connections = 4096, /* 1,000 idle clients must not lock others out; clamped to RLIMIT_NOFILE */
        .max_body = 64 * KIB,
        .request_timeout = 10 * USEC_PER_SEC,
    };
    static const char *const argv[] = {
        DEFAULT_COMMAND_0, "--state", "{state_dir}", "--content", "{content_dirs}", "{mountpoint}", NULL,
    };
    if (!(l->source = strdup(name)) || !(l->root = strdup(DEFAULT_ROOT)) || !(w->user = strdup("root")) ||
        !(l->api.socket_path = strdup(LAYOUT_API_SOCKET_DEFAULT)) || !(l->api.socket_group = strdup("layoutd")) ||
        strv_copy(argv, &w->command) < 0 || !(w->environment = calloc(1, sizeof(char *))))
        return -ENOMEM;
    *ret = TAKE_PTR(l);
    return 0;
}

static void parse_top(Parser *p, const LayoutNode *n, Layout *l) {
    static const char *const keys[] = { "version", "root", "pools", "workspace", "api", NULL };
    if (n->type != LAYOUT_NODE_MAPPING) {
        err(p, n, "the layout must be a mapping with keys such as version, root, pools; got %s", node_kind(n));
        return;
    }
    if (!map_check(p, n, keys, NULL, "the layout"))
        return;
    LayoutNode *v, *k;
    const char *ver;
    if (!(v = map_get(n, "version", NULL)))
        err(p, n, "missing required key 'version' (write 'version: 1' as the first line)");
    else if ((ver = get_scalar(p, v, "version", "1")) && !streq(ver, "1"))
        err(p, v, "version: must be %d (this layoutd understands layout version %d), got '%s'", LAYOUT_VERSION,
            LAYOUT_VERSION, ver);
    if ((v = map_get(n, "root", NULL)))
        (void) get_path(p, v, "root", &l->root);
    if (!(v = map_get(n, "pools", &k)))
        err(p, n, "missing required key 'pools' (at least pools: {state: {...}})");
    else
        parse_pools(p, v, k, l);
    if ((v = map_get(n, "workspace", NULL)))
        parse_workspace(p, v, l);
    if ((v = map_get(n, "api", NULL)))
        parse_api(p, v, &l->api);

    if (l->workspace.mount_root_is_default) {
        free(l->workspace.mount_root);
        l->workspace.mount_root = NULL;
        if (asprintf(&l->workspace.mount_root, "%s/workspaces", streq(l->root, "/") ? "" : l->root) < 0) {
            l->workspace.mount_root = NULL;
            oom(p);
        }
    }
}

int layout_parse_string(const char *data, size_t len, const char *name, Layout **ret, LayoutErrors *errors) {
    _cleanup_(layout_errors_clear) LayoutErrors local = {};
    if (!errors)
        errors = &local; /* the caller does not want them, but we need the count */
    Parser p = { .name = name ?: "<input>", .errors = errors };
    _cleanup_(layout_node_freep) LayoutNode *tree = NULL;
    _cleanup_(layout_freep) Layout *l = NULL;
    size_t n_before = errors->n;
    int r;

    if (!data && len > 0)
        return -EINVAL;
    if (len > LAYOUT_FILE_MAX) {
        r = layout_errors_add(errors, p.name, 0, 0, "the input is larger than %d KiB; that is not a layout",
                              LAYOUT_FILE_MAX / 1024);
        return r < 0 ? r : -EINVAL;
    }
    r = layout_node_parse(data ?: "", len, p.name, &tree, errors);
    if (r == -ENOMEM)
        return r;
    if (r < 0 && !tree) {
        layout_errors_sort(errors);
        return -EINVAL;
    }
    if (!tree) {
        r = layout_errors_add(errors, p.name, 0, 0,
                              "the file is empty; expected a layout (a mapping starting with 'version: 1')");
        return r < 0 ? r : -EINVAL;
    }
    r = layout_new_defaults(p.name, &l);
    if (r < 0)
        return r;
    if (node_is_null(tree))
        err(&p, NULL, "the file is empty; expected a layout (a mapping starting with 'version: 1')");
    else
        parse_top(&p, tree, l);
    if (p.oom < 0)
        return p.oom;
    if (errors->n > n_before) {
        layout_errors_sort(errors);
        return -EINVAL;
    }
    *ret = TAKE_PTR(l);
    return 0;
}

/* Reads at most LAYOUT_FILE_MAX + 1 bytes, so that /dev/zero or a huge
 * file is an error, not an endless allocation. Pipes work
 * (`layoutctl validate <(generate)`). */
static int read_layout_file(const char *path, char **ret, size_t *ret_len) {
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return negative_errno();
    struct stat st;
    if (fstat(fd, &st) < 0)
        return negative_errno();
    if (S_ISDIR(st.st_mode))
        return -EISDIR;
    _cleanup_free_ char *buf = malloc(LAYOUT_FILE_MAX + 2);
    if (!buf)
        return -ENOMEM;
    size_t len = 0;
    while (len <= LAYOUT_FILE_MAX) {
        ssize_t k = read(fd, buf + len, LAYOUT_FILE_MAX + 1 - len);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return negative_errno();
        }
        if (k == 0)
            break;
        len += (size_t) k;
    }
    if (len > LAYOUT_FILE_MAX)
        return -EFBIG;
    buf[len] = 0;
    *ret = TAKE_PTR(buf);
    *ret_len = len;
    return 0;
}

int layout_parse_file(const char *path, Layout **ret, LayoutErrors *errors) {
    _cleanup_free_ char *data = NULL;
    size_t len = 0;
    int r;

    if (!path)
        return -EINVAL;
    r = read_layout_file(path, &data, &len);
    if (r < 0) {
        int k;
        if (r == -EFBIG)
            k = layout_errors_add(errors, path, 0, 0, "the file is larger than %d KiB; that is not a layout",
                                  LAYOUT_FILE_MAX / 1024);
        else
            k = layout_errors_add(errors, path, 0, 0, "cannot read the layout: %s", strerror(-r));
        return k < 0 ? k : r;
    }
    return layout_parse_string(data, len, path, ret, errors);
}
