/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Internals of src/layout/, not for other modules: the YAML node tree
 * (libyaml events turned into nodes that remember their line and column)
 * and the error list helpers.
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "layout.h"

/* More errors than this in one file is noise; the rest are dropped with a
 * final note (it also bounds the work a hostile input can cause). */
#define LAYOUT_ERRORS_MAX 100
/* Deeper nesting than this is never a layout; refusing it keeps the tree
 * walk's recursion bounded. */
#define LAYOUT_NESTING_MAX 32
/* Bounds that keep hostile input from costing quadratic time: a layout is
 * a few kilobytes with a few dozen keys per mapping. */
#define LAYOUT_FILE_MAX (1024 * 1024)
#define LAYOUT_ITEMS_MAX 1024

typedef enum LayoutNodeType {
    LAYOUT_NODE_SCALAR,
    LAYOUT_NODE_SEQUENCE,
    LAYOUT_NODE_MAPPING,
} LayoutNodeType;

typedef struct LayoutNode LayoutNode;
struct LayoutNode {
    LayoutNodeType type;
    unsigned line, column; /* 1-based */
    char *value;           /* scalar text */
    bool plain;            /* scalar was unquoted (so "~" or "" means null) */
    bool invalid;          /* already reported (an alias): checks skip it */
    /* Sequence: the items. Mapping: key, value, key, value, ... */
    LayoutNode **items;
    size_t n_items, n_allocated;
};

LayoutNode *layout_node_free(LayoutNode *n);
DEFINE_TRIVIAL_CLEANUP_FUNC(LayoutNode *, layout_node_free)

/*
 * Builds the node tree of data with libyaml. Syntax problems are appended to
 * errors (syntax errors stop the parse: libyaml cannot go on after one).
 * *ret is NULL for an empty document.
 * Returns: -ENOMEM, -EINVAL (errors were added; *ret may still be set for
 * semantic problems such as aliases), 0.
 */
int layout_node_parse(const char *data, size_t len, const char *name, LayoutNode **ret, LayoutErrors *errors);

/* Stable sort by line, then column. */
void layout_errors_sort(LayoutErrors *e);

/* layout-marks.c: records where every value of tree stands (replacing
 * what l had). Returns: -ENOMEM, 0. */
int layout_marks_collect(Layout *l, const LayoutNode *tree);
/* Forgets key's mark (its value no longer comes from the file). */
void layout_marks_forget(Layout *l, const char *key);
void layout_marks_done(Layout *l);
