/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>

#include "layout.h"
#include "place-id.h"

static bool id_char(char c, bool first) {
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
        return true;
    return !first && c == '-';
}

int place_workspace_id_check(const char *id) {
    if (!id || !*id)
        return -EINVAL;
    size_t i;
    for (i = 0; id[i]; i++) {
        if (i >= LAYOUT_WORKSPACE_ID_MAX)
            return -ENAMETOOLONG;
        if (!id_char(id[i], i == 0))
            return -EINVAL;
    }
    return 0;
}

bool place_workspace_id_is_valid(const char *id) {
    return place_workspace_id_check(id) == 0;
}
