/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A pool's capacity keys: when a volume is full enough to say so
 * (capacity:), when and how far it grows by itself (growth:), and the
 * content pool's sweep (gc:). See docs/layout.md and docs/operations.md,
 * "Capacity". Defaults are set by the caller (pool_defaults); these only
 * read what the operator wrote.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "layout-parser.h"
#include "util.h"

static const char *const capacity_keys[] = { "warn", "critical", NULL };
static const char *const growth_keys[] = { "threshold", "step", "max_size", "host_reserve", NULL };
static const char *const gc_keys[] = { "command", "interval", "grace", "free_threshold", NULL };

void lp_parse_capacity(Parser *p, const LayoutNode *n, Pool *pool) {
    if (!lp_map_check(p, n, capacity_keys, NULL, "capacity"))
        return;
    LayoutNode *w = lp_map_get(n, "warn", NULL), *c = lp_map_get(n, "critical", NULL);
    bool wok = !w || lp_get_percent(p, w, "capacity.warn", 1, 99, &pool->capacity.warn);
    bool cok = !c || lp_get_percent(p, c, "capacity.critical", 1, 100, &pool->capacity.critical);
    if (wok && cok && pool->capacity.warn >= pool->capacity.critical)
        lp_err(p, w ?: c, "capacity.warn (%u%%) must be below capacity.critical (%u%%)", pool->capacity.warn,
               pool->capacity.critical);
}

void lp_parse_growth(Parser *p, const LayoutNode *n, Pool *pool) {
    GrowthPolicy *g = &pool->growth;
    const BackendTraits *t = backend_traits(pool->backend);
    if (n->invalid)
        return;
    /* growth: false is the default spelled out. */
    if (n->type == LAYOUT_NODE_SCALAR) {
        bool on;
        if (!lp_get_bool(p, n, "growth", &on))
            return;
        if (on) {
            lp_err(p, n, "growth: expected a mapping such as {threshold: 80%%, max_size: 16G} (or false); "
                   "'true' does not say how far a volume may grow");
            return;
        }
        g->enabled = false;
        return;
    }
    if (!lp_map_check(p, n, growth_keys, NULL, "growth"))
        return;
    if (t && !t->takes_growth) {
        /* The backends that do, from their traits. */
        char which[128] = "";
        for (Backend b = 0; b < _BACKEND_MAX; b++)
            if (backend_traits(b)->takes_growth)
                snprintf(which + strlen(which), sizeof which - strlen(which), "%s%s", which[0] ? ", " : "",
                         backend_to_string(b));
        lp_err(p, n, "growth: only %s volumes grow by themselves (this pool's backend is %s)%s", which,
               backend_to_string(pool->backend),
               t->takes_vdo ? "; a VDO volume grows when volume_size is raised and the layout reloaded" : "");
        return;
    }
    g->enabled = true;
    LayoutNode *v;
    if ((v = lp_map_get(n, "threshold", NULL)))
        (void) lp_get_percent(p, v, "growth.threshold", 1, 99, &g->threshold);
    if ((v = lp_map_get(n, "step", NULL))) {
        if (v->type == LAYOUT_NODE_SCALAR && !v->invalid && streq(v->value, "double"))
            g->step = 0;
        else if (lp_get_size(p, v, "growth.step", &g->step)) {
            if (g->step == 0 || g->step % (4 * KIB) != 0)
                lp_err(p, v, "growth.step: expected 'double' or a size that is a positive multiple of 4 KiB, got "
                       "%s", v->value);
        }
    }
    LayoutNode *mv = lp_map_get(n, "max_size", NULL);
    if (mv && lp_get_size(p, mv, "growth.max_size", &g->max_size)) {
        if (g->max_size % (4 * KIB) != 0)
            lp_err(p, mv, "growth.max_size: must be a multiple of 4 KiB, got %s", mv->value);
        else if (g->max_size > MAX_VOLUME_SIZE)
            lp_err(p, mv, "growth.max_size: must be at most 1024TiB, got %s", mv->value);
        else if (g->max_size <= pool->volume_size)
            lp_err(p, mv, "growth.max_size (%s) must be more than volume_size, where every volume starts",
                   mv->value);
    } else if (!mv) {
        g->max_size = MIN(pool->volume_size * 16, (uint64_t) MAX_VOLUME_SIZE);
        g->max_size -= g->max_size % (4 * KIB);
    }
    if ((v = lp_map_get(n, "host_reserve", NULL))) {
        const char *s = v->type == LAYOUT_NODE_SCALAR && !v->invalid ? v->value : NULL;
        if (s && *s && s[strlen(s) - 1] == '%') {
            if (lp_get_percent(p, v, "growth.host_reserve", 0, 90, &g->host_reserve_percent))
                g->host_reserve = 0;
        } else if (lp_get_size(p, v, "growth.host_reserve", &g->host_reserve))
            g->host_reserve_percent = 0;
    }
}

void lp_parse_gc(Parser *p, const LayoutNode *n, Pool *pool) {
    GcPolicy *g = &pool->gc;
    if (n->invalid)
        return;
    if (n->type == LAYOUT_NODE_SCALAR) {
        (void) lp_get_bool(p, n, "gc", &g->enabled);
        return;
    }
    if (!lp_map_check(p, n, gc_keys, NULL, "gc"))
        return;
    g->enabled = true;
    LayoutNode *v;
    if ((v = lp_map_get(n, "command", NULL))) {
        char **argv = NULL;
        if (v->type != LAYOUT_NODE_SEQUENCE && !v->invalid)
            lp_err(p, v, "gc.command: expected a list (the argv, e.g. [/usr/libexec/layoutd/layoutd-wsfs, gc]), "
                   "got %s; a command is never a shell string", lp_node_kind(v));
        else if (v->type == LAYOUT_NODE_SEQUENCE && v->n_items == 0)
            lp_err(p, v, "gc.command: must not be empty; command[0] is the absolute path of the sweeper");
        else if (lp_get_strv(p, v, "gc.command", &argv)) {
            if (argv[0][0] != '/') {
                lp_err(p, v->items[0], "gc.command[0]: expected an absolute path, got '%s'", argv[0]);
                strv_free(argv);
            } else {
                strv_free(g->command);
                g->command = argv;
            }
        }
    }
    if ((v = lp_map_get(n, "interval", NULL)))
        (void) lp_get_duration_range(p, v, "gc.interval", 60 * USEC_PER_SEC, 7 * 86400 * USEC_PER_SEC,
                                     &g->interval);
    /* The grace period is what keeps alive an object that a daemon is
     * about to reference; under a minute it is a race, not a grace. */
    if ((v = lp_map_get(n, "grace", NULL)))
        (void) lp_get_duration_range(p, v, "gc.grace", 60 * USEC_PER_SEC, 30 * 86400 * USEC_PER_SEC, &g->grace);
    if ((v = lp_map_get(n, "free_threshold", NULL)))
        (void) lp_get_percent(p, v, "gc.free_threshold", 0, 90, &g->free_threshold);
}

/* The reference daemon's binary name: its sweep is the default. */
#define REFERENCE_DAEMON "layoutd-wsfs"

void lp_resolve_gc(Parser *p, const LayoutNode *gc_node, Pool *content, const WorkspaceConfig *w) {
    GcPolicy *g = &content->gc;
    const char *cmd0 = w->command && w->command[0] ? w->command[0] : NULL;
    const char *base = cmd0 ? strrchr(cmd0, '/') : NULL;
    bool reference = base && streq(base + 1, REFERENCE_DAEMON);
    if (!gc_node)
        /* Objects belong to the daemons' format, so only the reference
         * daemon's pool is swept without being asked. */
        g->enabled = reference;
    if (!g->enabled || g->command)
        return;
    if (!reference) {
        lp_err(p, gc_node, "gc: needs a command: the workspaces run %s, not %s (whose sweep is the default); "
               "write gc: {command: [/path/to/sweeper, gc]} or gc: false", cmd0 ?: "no command", REFERENCE_DAEMON);
        return;
    }
    const char *argv[] = { cmd0, "gc", NULL };
    if (strv_copy(argv, &g->command) < 0)
        (void) lp_oom(p);
}
