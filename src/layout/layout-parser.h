/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Internals of the validator, shared by its files (layout-parse.c: the
 * schema; layout-parse-capacity.c: capacity, growth and GC; layout-values.c:
 * what both read values with). Not for other modules.
 *
 * Every reader takes the node and the key it is reported as, reports its
 * own problem at the node (file:line:column) and returns false; on success
 * it stores the value and returns true. A node already reported (`invalid`)
 * is skipped silently. Allocation failures are remembered in Parser.oom.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "layout-internal.h"

#define MAX_VOLUME_SIZE (1024 * TIB)

typedef struct Parser {
    const char *name;
    LayoutErrors *errors;
    int oom; /* -ENOMEM once an allocation failed */
    bool command_given; /* workspace.command was read (not the default) */
} Parser;

/* The error sink: one diagnostic at `at` (NULL: the file as a whole). */
void lp_err(Parser *p, const LayoutNode *at, const char *fmt, ...) _printf_(3, 4);
/* Remembers an allocation failure; returns NULL. */
void *lp_oom(Parser *p);
/* strdup() that remembers a failure. */
char *lp_strdup(Parser *p, const char *s);

/* An empty plain scalar, "~" or null. */
bool lp_node_is_null(const LayoutNode *n);
/* "a mapping", "a list", "an empty value", "a scalar": for messages. */
const char *lp_node_kind(const LayoutNode *n);
/* Mappings: the key of pair i (NULL if not a usable string), the number
 * of pairs, and the first value of key (with its key node). */
const char *lp_map_key(const LayoutNode *map, size_t i);
size_t lp_map_pairs(const LayoutNode *map);
LayoutNode *lp_map_get(const LayoutNode *map, const char *key, LayoutNode **ret_key);
/* The known word that key is probably a typo of, or NULL. */
const char *lp_did_you_mean(const char *key, const char *const *known);
/* "a, b, c" (malloc'ed; NULL on OOM). */
char *lp_join_keys(const char *const *known);
/* node is a mapping whose keys are strings, unique and in `known` (keys in
 * `skip` are the caller's to report). False if it is not a mapping. */
bool lp_map_check(Parser *p, const LayoutNode *node, const char *const *known, const char *const *skip,
                  const char *where);

/* Typed values. */
const char *lp_get_scalar(Parser *p, const LayoutNode *n, const char *key, const char *expected);
bool lp_get_string(Parser *p, const LayoutNode *n, const char *key, char **out);
bool lp_get_bool(Parser *p, const LayoutNode *n, const char *key, bool *out);
/* true, false, or the word `word` (then *ret_word is set and *out left
 * alone), for a bool with a third value such as `auto`; word NULL (and
 * ret_word NULL) is lp_get_bool. */
bool lp_get_bool_or(Parser *p, const LayoutNode *n, const char *key, const char *word, bool *out, bool *ret_word);
bool lp_get_uint(Parser *p, const LayoutNode *n, const char *key, uint64_t min, uint64_t max, uint64_t *out);
bool lp_get_unsigned(Parser *p, const LayoutNode *n, const char *key, unsigned min, unsigned max,
                     unsigned *out);
bool lp_get_size(Parser *p, const LayoutNode *n, const char *key, uint64_t *out);
/* A signed whole number in min..max. */
bool lp_get_int(Parser *p, const LayoutNode *n, const char *key, int64_t min, int64_t max, int64_t *out);
/* "80%" (the % is required, so that 80 and 0.8 cannot be confused):
 * a whole percent in min..max. */
bool lp_get_percent(Parser *p, const LayoutNode *n, const char *key, unsigned min, unsigned max, unsigned *out);
bool lp_get_duration(Parser *p, const LayoutNode *n, const char *key, usec_t *out);
bool lp_get_duration_range(Parser *p, const LayoutNode *n, const char *key, usec_t min, usec_t max,
                           usec_t *out);
bool lp_get_mode(Parser *p, const LayoutNode *n, const char *key, mode_t *out);
/* One of names[0..n_names) (an enum's string table: NULL entries are
 * skipped); *out is its index. */
bool lp_get_enum(Parser *p, const LayoutNode *n, const char *key, const char *const *names, size_t n_names,
                 int *out);
/* An absolute path, normalised (no "." / "..", no doubled or trailing /). */
bool lp_get_path(Parser *p, const LayoutNode *n, const char *key, char **out);
bool lp_get_strv(Parser *p, const LayoutNode *n, const char *key, char ***out);
/* A user or group name as useradd accepts it, or a numeric id. */
bool lp_get_account(Parser *p, const LayoutNode *n, const char *key, char **out);

/* layout-parse-capacity.c: a pool's capacity:, growth: and gc: keys. */
void lp_parse_capacity(Parser *p, const LayoutNode *n, Pool *pool);
void lp_parse_growth(Parser *p, const LayoutNode *n, Pool *pool);
void lp_parse_gc(Parser *p, const LayoutNode *n, Pool *pool);
/* After the workspace is parsed: the content pool's gc defaults (on, with
 * the reference daemon's own sweep, when the workspaces run it) and the
 * check that an enabled sweep has a command. gc_node: the pool's gc:
 * value, or NULL when the layout does not have one. */
void lp_resolve_gc(Parser *p, const LayoutNode *gc_node, Pool *content, const WorkspaceConfig *w);
