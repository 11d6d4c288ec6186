/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What a layout asks of this host, checked against it: the part of
 * validation the pure layout library cannot do (src/layout reads its file
 * and nothing else). `layoutctl validate`, the engine's load, the agent's
 * start and every reload run it, so "validate says valid" still means
 * "the agent will load it", and a reload with a missing user is refused
 * instead of failing every create later.
 *
 * Checked: root and workspace.mount_root, with their symlinks resolved
 * (as far as they exist), are not a system directory nor one others use
 * (layout_path_why_unsafe), a default mount_root only where root passed;
 * workspace.user and workspace.group exist.
 */

#include "layout.h"

/* Adds one error per problem to errors, at the position of the key's value
 * in file (layout_key_position; line 0 for a value the file does not give,
 * such as --root). Returns: -ENOMEM, or the number of problems found (0:
 * fine). */
int engine_check_host(const Layout *l, const char *file, LayoutErrors *errors);
