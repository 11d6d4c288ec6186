/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libyaml's event stream turned into a small tree whose nodes remember
 * where they started, so that every diagnostic can name file:line:column.
 * We use the event API rather than yaml_document_t because the document
 * API resolves aliases silently and loses the information we need to
 * refuse them with a position.
 */
#include <yaml.h>

#include "layout-internal.h"

LayoutNode *layout_node_free(LayoutNode *n) {
    if (!n)
        return NULL;
    for (size_t i = 0; i < n->n_items; i++)
        layout_node_free(n->items[i]);
    free(n->items);
    free(n->value);
    free(n);
    return NULL;
}

static int node_append(LayoutNode *parent, LayoutNode *child) {
    if (parent->n_items == parent->n_allocated) {
        size_t n = MAX(parent->n_allocated * 2, (size_t) 8);
        LayoutNode **t = realloc(parent->items, sizeof(LayoutNode *) * n);
        if (!t)
            return -ENOMEM;
        parent->items = t;
        parent->n_allocated = n;
    }
    parent->items[parent->n_items++] = child;
    return 0;
}

static LayoutNode *node_new(LayoutNodeType type, const yaml_mark_t *m) {
    LayoutNode *n = calloc(1, sizeof(LayoutNode));
    if (!n)
        return NULL;
    n->type = type;
    n->line = (unsigned) m->line + 1;
    n->column = (unsigned) m->column + 1;
    return n;
}

/* libyaml reports reader errors (bad UTF-8, control characters) by byte
 * offset only; turn that into a line and column. */
static void offset_to_position(const char *data, size_t len, size_t offset, unsigned *line, unsigned *col) {
    unsigned l = 1, c = 1;
    for (size_t i = 0; i < offset && i < len; i++) {
        if (data[i] == '\n') {
            l++;
            c = 1;
        } else if (((unsigned char) data[i] & 0xC0) != 0x80)
            c++;
    }
    *line = l;
    *col = c;
}

static int report_parser_error(const yaml_parser_t *p, const char *data, size_t len, const char *name,
                               LayoutErrors *errors) {
    const char *problem = p->problem ?: "unknown problem";
    unsigned line, col;

    if (p->error == YAML_MEMORY_ERROR)
        return -ENOMEM;
    if (p->error == YAML_READER_ERROR) {
        offset_to_position(data, len, p->problem_offset, &line, &col);
        return layout_errors_add(errors, name, line, col,
                                 "cannot read the file: %s; a layout must be UTF-8 text", problem);
    }
    line = (unsigned) p->problem_mark.line + 1;
    col = (unsigned) p->problem_mark.column + 1;
    if (p->context)
        return layout_errors_add(errors, name, line, col, "YAML syntax error: %s %s (at %u:%u); expected valid YAML",
                                 problem, p->context, (unsigned) p->context_mark.line + 1,
                                 (unsigned) p->context_mark.column + 1);
    return layout_errors_add(errors, name, line, col, "YAML syntax error: %s; expected valid YAML", problem);
}

int layout_node_parse(const char *data, size_t len, const char *name, LayoutNode **ret, LayoutErrors *errors) {
    yaml_parser_t parser;
    _cleanup_(layout_node_freep) LayoutNode *root = NULL;
    LayoutNode *stack[LAYOUT_NESTING_MAX + 1];
    size_t depth = 0;
    unsigned documents = 0;
    bool failed = false, done = false;
    int r = 0;

    if (!yaml_parser_initialize(&parser))
        return -ENOMEM;
    yaml_parser_set_input_string(&parser, (const unsigned char *) data, len);

    while (!done) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            r = report_parser_error(&parser, data, len, name, errors);
            failed = true;
            break;
        }

        LayoutNode *n = NULL;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        case YAML_DOCUMENT_START_EVENT:
            if (++documents > 1) {
                r = layout_errors_add(errors, name, (unsigned) ev.start_mark.line + 1,
                                      (unsigned) ev.start_mark.column + 1,
                                      "a second YAML document; a layout file holds exactly one document");
                failed = true;
                done = true;
            }
            break;
        case YAML_SCALAR_EVENT:
            n = node_new(LAYOUT_NODE_SCALAR, &ev.start_mark);
            if (!n || !(n->value = strndup((const char *) ev.data.scalar.value, ev.data.scalar.length))) {
                r = -ENOMEM;
                break;
            }
            /* An embedded NUL ("\0" escape) would silently truncate the
             * value in every C string use; refuse it. */
            if (strlen(n->value) != ev.data.scalar.length) {
                r = layout_errors_add(errors, name, n->line, n->column,
                                      "a NUL character in a value is not allowed");
                n->invalid = true;
                failed = true;
            }
            n->plain = ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
            break;
        case YAML_ALIAS_EVENT:
            n = node_new(LAYOUT_NODE_SCALAR, &ev.start_mark);
            if (!n) {
                r = -ENOMEM;
                break;
            }
            n->invalid = true;
            failed = true;
            r = layout_errors_add(errors, name, n->line, n->column,
                                  "YAML aliases (*%s) are not supported in layouts; write the value out",
                                  (const char *) ev.data.alias.anchor);
            break;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if (depth >= LAYOUT_NESTING_MAX) {
                r = layout_errors_add(errors, name, (unsigned) ev.start_mark.line + 1,
                                      (unsigned) ev.start_mark.column + 1,
                                      "nesting deeper than %d levels; a layout is never this deep",
                                      LAYOUT_NESTING_MAX);
                failed = true;
                done = true;
                break;
            }
            n = node_new(ev.type == YAML_MAPPING_START_EVENT ? LAYOUT_NODE_MAPPING : LAYOUT_NODE_SEQUENCE,
                         &ev.start_mark);
            if (!n)
                r = -ENOMEM;
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            if (depth > 0)
                depth--;
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);

        if (n) {
            int k = 0;
            if (depth > 0)
                k = node_append(stack[depth - 1], n);
            else if (!root)
                root = n;
            else
                layout_node_free(n); /* cannot happen: one document, one root */
            if (k < 0) {
                layout_node_free(n);
                r = k;
            } else if (n->type != LAYOUT_NODE_SCALAR)
                stack[depth++] = n;
        }
        if (r < 0)
            break;
    }
    yaml_parser_delete(&parser);

    if (r < 0)
        return r;
    /* After a syntax error the tree is incomplete: do not hand it out, or
     * the validator would report "missing key" noise behind the real
     * problem. Alias errors keep the tree, it is still well formed. */
    if (failed && (depth > 0 || !done || documents > 1))
        return -EINVAL;
    *ret = TAKE_PTR(root);
    return failed ? -EINVAL : 0;
}
