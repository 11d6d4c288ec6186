/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Small json-c helpers that every layer uses the same way. */

#include <json-c/json.h>

/* A new JSON string of s, or NULL (JSON null once added to an object)
 * when s is NULL. */
json_object *json_string_or_null(const char *s);
