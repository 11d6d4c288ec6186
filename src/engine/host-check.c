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

/* Where the layout's file gives what key's error is about: its value, or
 * (a default) the value it follows from (from, NULL: none); 0:0, the file
 * as a whole, when neither is in the file (--root, or a default). */
typedef struct Position {
    unsigned line, column;
} Position;

static Position position(const Layout *l, const char *key, const char *from) {
    Position p = {};
    if (!layout_key_position(l, key, &p.line, &p.column) && from)
        (void) layout_key_position(l, from, &p.line, &p.column);
    return p;
}

static int check_path(const Layout *l, const char *key, const char *from, const char *path, const char *file,
                      LayoutErrors *errors) {
    _cleanup_free_ char *real = NULL;
    int r = resolve(path, &real);
    if (r == -ENOMEM)
        return r;
    if (r < 0)
        return 0; /* nothing to resolve it against: the lexical check stands */
    const char *why = layout_path_why_unsafe(real);
    if (!why)
        return 0;
    Position at = position(l, key, from);
    r = streq(real, path)
            ? layout_errors_add(errors, file, at.line, at.column, "%s: %s cannot be used: %s", key, path, why)
            : layout_errors_add(errors, file, at.line, at.column, "%s: %s resolves to %s, which cannot be used: %s",
                                key, path, real, why);
    return r < 0 ? r : 1;
}

static int check_account(const Layout *l, const char *key, const char *name, bool group, const char *file,
                         LayoutErrors *errors) {
    char buf[16384];
    int e;
    if (!name || (name[0] && strspn(name, "0123456789") == strlen(name)))
        return 0; /* a number is an id, which needs no entry */
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
    Position at = position(l, key, NULL);
    int r = e && e != ENOENT && e != ESRCH
                ? layout_errors_add(errors, file, at.line, at.column, "%s: cannot look up '%s': %s", key, name,
                                    strerror(e))
                : layout_errors_add(errors, file, at.line, at.column,
                                    "%s: no %s '%s' on this host: every workspace's daemon would fail to start; "
                                    "create it first or name another",
                                    key, group ? "group" : "user", name);
    return r < 0 ? r : 1;
}

int engine_check_host(const Layout *l, const char *file, LayoutErrors *errors) {
    int n = 0, r;
    if (!l || !errors)
        return -EINVAL;
    if ((r = check_path(l, "root", NULL, l->root, file, errors)) < 0)
        return r;
    n += r;
    /* A default mount_root (<root>/workspaces) follows root: where root
     * was refused, so is it, for the same reason, and once is enough. */
    bool derived = l->workspace.mount_root_is_default;
    if (l->workspace.mount_root && !(derived && n > 0)) {
        r = check_path(l, "workspace.mount_root", derived ? "root" : NULL, l->workspace.mount_root, file, errors);
        if (r < 0)
            return r;
        n += r;
    }
    if ((r = check_account(l, "workspace.user", l->workspace.user, false, file, errors)) < 0)
        return r;
    n += r;
    if ((r = check_account(l, "workspace.group", l->workspace.group, true, file, errors)) < 0)
        return r;
    return n + r;
}
