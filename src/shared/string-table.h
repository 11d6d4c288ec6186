/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Enum <-> string, once for every enum (systemd's DEFINE_STRING_TABLE_LOOKUP).
 * Declare the names as `static const char *const <name>_table[] = {...}`
 * indexed by the enum, then
 *
 *     DEFINE_STRING_TABLE_LOOKUP(backend, Backend);
 *
 * defines backend_to_string() (NULL for a value out of range) and
 * backend_from_string() (the enum's -EINVAL "invalid" value for an unknown
 * or NULL name). Pure: no I/O, no allocation.
 */

#include <stddef.h>

#include "macro.h"

/* The index of key in table[0..n), or -EINVAL. NULL entries never match. */
static inline int string_table_lookup(const char *const *table, size_t n, const char *key) {
    if (!key)
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        if (table[i] && streq(table[i], key))
            return (int) i;
    return -EINVAL;
}

#define DEFINE_STRING_TABLE_LOOKUP(name, type)                                         \
    const char *name##_to_string(type v) {                                             \
        if ((int) v < 0 || (size_t) v >= ELEMENTSOF(name##_table))                     \
            return NULL;                                                               \
        return name##_table[v];                                                        \
    }                                                                                  \
    type name##_from_string(const char *s) {                                           \
        return (type) string_table_lookup(name##_table, ELEMENTSOF(name##_table), s);   \
    }                                                                                  \
    struct __useless_struct_to_allow_trailing_semicolon__
