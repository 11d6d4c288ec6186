/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Expansion of a workspace command template (WorkspaceConfig.command) into
 * the argv the daemon is started with. No shell is involved: each template
 * element is one argv element, and placeholders are replaced inside it
 * textually ("--state={state_dir}" works). Pure: no I/O.
 */

#include "macro.h"

typedef struct ArgvValues {
    const char *id;
    const char *tenant;              /* NULL expands to "" */
    const char *state_dir;
    const char *const *content_dirs; /* NULL-terminated, may be NULL/empty */
    const char *mountpoint;
    const char *volume;              /* NULL expands to "" */
} ArgvValues;

/*
 * Expands every element of tmpl. Placeholders: {id} {tenant} {state_dir}
 * {content_dirs} (comma-joined) {content_dir} (the first one) {shards}
 * (number of content dirs) {mountpoint} {volume}. "{{" and "}}" stand for
 * literal braces. A value that is needed but missing (NULL id, state_dir,
 * mountpoint) is an error, as is an empty template.
 * Returns: -EINVAL (unknown or unterminated placeholder, missing value),
 * -ENOMEM, 0 with *ret a new strv.
 */
int argv_template_expand(const char *const *tmpl, const ArgvValues *v, char ***ret);
