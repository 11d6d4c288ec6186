/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A layout directory (/etc/layoutd/layouts.d) holds exactly one *.yaml.
 * Merging several files would need rules for how placement bounds and pool
 * sizes combine across files, and every such rule surprises someone; one
 * file per host, distributed by configuration management, has none.
 */
#include <dirent.h>
#include <stdio.h>
#include <sys/stat.h>

#include "layout-internal.h"
#include "util.h"

static int compare_str(const void *a, const void *b) {
    return strcmp(*(char *const *) a, *(char *const *) b);
}

static bool name_is_yaml(const char *n) {
    size_t l = strlen(n);
    /* Hidden files are editor droppings (.foo.yaml.swp, .#foo.yaml). */
    return n[0] != '.' && l > 5 && streq(n + l - 5, ".yaml");
}

int layout_find_in_dir(const char *dir, char **ret_path, LayoutErrors *errors) {
    _cleanup_strv_free_ char **found = NULL;
    DIR *d;
    int r = 0;

    if (!dir || !ret_path)
        return -EINVAL;
    d = opendir(dir);
    if (!d) {
        r = negative_errno();
        int k = layout_errors_add(errors, dir, 0, 0, "cannot open the layout directory: %s", strerror(-r));
        return k < 0 ? k : r;
    }
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            if (errno != 0)
                r = negative_errno();
            break;
        }
        if (!name_is_yaml(de->d_name))
            continue;
        _cleanup_free_ char *p = NULL;
        if (asprintf(&p, "%s/%s", dir, de->d_name) < 0) {
            r = -ENOMEM;
            break;
        }
        struct stat st;
        if (stat(p, &st) < 0 || !S_ISREG(st.st_mode))
            continue;
        if (strv_extend(&found, p) < 0) {
            r = -ENOMEM;
            break;
        }
    }
    closedir(d);
    if (r < 0)
        return r;

    size_t n = strv_length((const char *const *) found);
    if (n == 0) {
        int k = layout_errors_add(errors, dir, 0, 0, "no *.yaml layout in the directory");
        return k < 0 ? k : -ENOENT;
    }
    if (n > 1) {
        qsort(found, n, sizeof(char *), compare_str);
        for (size_t i = 0; i < n; i++) {
            int k = layout_errors_add(errors, found[i], 0, 0,
                                      "more than one layout in %s (%zu *.yaml files); exactly one is allowed, "
                                      "see docs/layout.md", dir, n);
            if (k < 0)
                return k;
        }
        return -ENOTUNIQ;
    }
    char *p = strdup(found[0]);
    if (!p)
        return -ENOMEM;
    *ret_path = p;
    return 0;
}
