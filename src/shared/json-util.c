/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "json-util.h"

json_object *json_string_or_null(const char *s) {
    return s ? json_object_new_string(s) : NULL;
}
