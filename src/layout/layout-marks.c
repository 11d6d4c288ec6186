/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where each value of a layout stands in its file: the marks the parser
 * keeps, kept on the Layout, so that a check made after the parse (the
 * host's, engine_check_host) names the key's file:line:column as every
 * error of the parser does.
 */
#include <stdio.h>

#include "layout-internal.h"

void layout_marks_done(Layout *l) {
    for (size_t i = 0; i < l->n_marks; i++)
        free(l->marks[i].key);
    free(l->marks);
    l->marks = NULL;
    l->n_marks = 0;
}

static int add(Layout *l, size_t *allocated, char *key, const LayoutNode *n) {
    if (l->n_marks == *allocated) {
        size_t m = MAX(*allocated * 2, (size_t) 32);
        LayoutMark *t = reallocarray(l->marks, m, sizeof(LayoutMark));
        if (!t) {
            free(key);
            return -ENOMEM;
        }
        l->marks = t;
        *allocated = m;
    }
    l->marks[l->n_marks++] = (LayoutMark) { .key = key, .line = n->line, .column = n->column };
    return 0;
}

/* Marks every value below n, whose own key is prefix ("" at the top). The
 * tree is as deep as LAYOUT_NESTING_MAX at most (layout_node_parse). */
static int walk(Layout *l, size_t *allocated, const LayoutNode *n, const char *prefix) {
    for (size_t i = 0; n->type != LAYOUT_NODE_SCALAR && i < n->n_items; i++) {
        const LayoutNode *v;
        char *key;
        int r;
        if (n->type == LAYOUT_NODE_MAPPING) {
            if (i % 2 == 0)
                continue;
            const LayoutNode *k = n->items[i - 1];
            if (k->type != LAYOUT_NODE_SCALAR || !k->value)
                continue;
            v = n->items[i];
            r = asprintf(&key, "%s%s%s", prefix, prefix[0] ? "." : "", k->value);
        } else {
            v = n->items[i];
            r = asprintf(&key, "%s[%zu]", prefix, i);
        }
        if (r < 0)
            return -ENOMEM;
        /* (key is the mark's now, and stays where it is.) */
        if ((r = add(l, allocated, key, v)) < 0 || (r = walk(l, allocated, v, key)) < 0)
            return r;
    }
    return 0;
}

int layout_marks_collect(Layout *l, const LayoutNode *tree) {
    size_t allocated = 0;
    layout_marks_done(l);
    return tree ? walk(l, &allocated, tree, "") : 0;
}

void layout_marks_forget(Layout *l, const char *key) {
    for (size_t i = 0; i < l->n_marks; i++)
        if (streq(l->marks[i].key, key)) {
            free(l->marks[i].key);
            l->marks[i] = l->marks[--l->n_marks];
            return;
        }
}

bool layout_key_position(const Layout *l, const char *key, unsigned *ret_line, unsigned *ret_column) {
    if (!l || !key)
        return false;
    for (size_t i = 0; i < l->n_marks; i++)
        if (streq(l->marks[i].key, key)) {
            if (ret_line)
                *ret_line = l->marks[i].line;
            if (ret_column)
                *ret_column = l->marks[i].column;
            return true;
        }
    return false;
}
