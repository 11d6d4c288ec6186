/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Workspace ids: [a-z0-9][a-z0-9-]{0,63} (LAYOUT_WORKSPACE_ID_MAX = 64
 * characters). The id is a directory name on a state volume and below the
 * mount root, and it appears in URLs and unit names; the charset rules out
 * '/', '.', '..', hidden names, whitespace, and case-only clashes on
 * case-insensitive tools. Clashes with existing directories and with kept
 * data are checked by place_workspace_create(), which sees the record.
 */

#include <stdbool.h>

/* Returns: -EINVAL (NULL, empty, bad character or first character),
 * -ENAMETOOLONG (more than LAYOUT_WORKSPACE_ID_MAX characters), 0. */
int place_workspace_id_check(const char *id);
bool place_workspace_id_is_valid(const char *id);
