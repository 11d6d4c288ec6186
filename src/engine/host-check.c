/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "host-check.h"
#include "util.h"

/* path with its symlinks resolved as far as it exists: the deepest
 * existing ancestor's realpath, then the rest as written. */
static int resolve(const char *path, char **ret) {
    _cleanup_free_ char *head = strdup(path);
    if (!head)
        return -ENOMEM;
    size_t n = strlen(head);
    for (;;) {
        char buf[PATH_MAX];
        if (realpath(head, buf)) {
            const char *rest = path + strlen(head);
            while (*rest == '/')
                rest++;
            bool root = streq(buf, "/");
            if (asprintf(ret, "%s%s%s", buf, *rest && !root ? "/" : "", rest) < 0)
                return -ENOMEM;
            return 0;
        }
        if (errno != ENOENT && errno != ENOTDIR)
            return negative_errno();
        char *slash = strrchr(head, '/');
        if (!slash)
            return -EINVAL;
        if (slash == head) {
            if (n == 1)
                return -ENOENT;
            head[1] = 0;
        } else
            *slash = 0;
        n = strlen(head);
    }
}

static int check_path(const char *key, const char *path, const char *file, LayoutErrors *errors) {
    _cleanup_free_ char *real = NULL;
    int r = resolve(path, &real);
    if (r == -ENOMEM)
        return r;
    if (r < 0)
        return 0; /* nothing to resolve it against: the lexical check stands */
    const char *why = layout_path_why_unsafe(real);
    if (!why)
        return 0;
    r = streq(real, path) ? layout_errors_add(errors, file, 0, 0, "%s: %s cannot be used: %s", key, path, why)
                          : layout_errors_add(errors, file, 0, 0, "%s: %s resolves to %s, which cannot be used: %s",
                                              key, path, real, why);
    return r < 0 ? r : 1;
}

static int check_account(const char *key, const char *name, bool group, const char *file, LayoutErrors *errors) {
    char buf[16384];
    int e;
    if (!name)
        return 0;
    if (group) {
        struct group gr, *g = NULL;
        e = getgrnam_r(name, &gr, buf, sizeof buf, &g);
        if (e == 0 && g)
            return 0;
    } else {
        struct passwd pw, *p = NULL;
        e = getpwnam_r(name, &pw, buf, sizeof buf, &p);
        if (e == 0 && p)
            return 0;
    }
    int r = e && e != ENOENT && e != ESRCH
                ? layout_errors_add(errors, file, 0, 0, "%s: cannot look up '%s': %s", key, name, strerror(e))
                : layout_errors_add(errors, file, 0, 0,
                                    "%s: no %s '%s' on this host: every workspace's daemon would fail to start; "
                                    "create it first or name another",
                                    key, group ? "group" : "user", name);
    return r < 0 ? r : 1;
}

int engine_check_host(const Layout *l, const char *file, LayoutErrors *errors) {
    int n = 0, r;
    if (!l || !errors)
        return -EINVAL;
    if ((r = check_path("root", l->root, file, errors)) < 0)
        return r;
    n += r;
    if (l->workspace.mount_root && (r = check_path("workspace.mount_root", l->workspace.mount_root, file, errors)) < 0)
        return r;
    n += r;
    if ((r = check_account("workspace.user", l->workspace.user, false, file, errors)) < 0)
        return r;
    n += r;
    if ((r = check_account("workspace.group", l->workspace.group, true, file, errors)) < 0)
        return r;
    return n + r;
}
