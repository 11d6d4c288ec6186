/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where a workspace's cache lives on its state volume, and what tools are
 * told so that they put their derived data there (place-cache.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "place-cache.h"
#include "util.h"

int place_cache_parent(const Layout *l, const char *volume, char **ret) {
    _cleanup_free_ char *vol = NULL;
    if (!l || isempty(volume) || !ret)
        return -EINVAL;
    int r = layout_mount_path(l, volume, &vol);
    if (r < 0)
        return r;
    if (asprintf(ret, "%s/" PLACE_CACHE_DIR, vol) < 0)
        return -ENOMEM;
    return 0;
}

int place_cache_source(const Layout *l, const char *volume, const char *id, char **ret) {
    _cleanup_free_ char *parent = NULL;
    if (isempty(id) || !ret)
        return -EINVAL;
    int r = place_cache_parent(l, volume, &parent);
    if (r < 0)
        return r;
    if (asprintf(ret, "%s/%s", parent, id) < 0)
        return -ENOMEM;
    return 0;
}

/* Each tool's own variable for where its derived data goes, and the
 * directory inside the cache; and how pnpm fills it. Only variables that
 * name a place for data a tool makes again on its own, or how it puts it
 * there: nothing that changes what it builds. */
static const struct {
    const char *name;
    const char *subdir; /* the variable names <cache>/<subdir>, or */
    const char *value;  /* it is this value */
} cache_variables[] = {
    /* pnpm (and npm) read npm_config_* from the environment: the store
     * and the virtual store in one mount, so that pnpm links files from
     * the store (link(2) needs one mount) and node_modules holds only
     * pnpm's symlinks and metadata. */
    { "npm_config_store_dir", "pnpm-store" },
    { "npm_config_virtual_store_dir", "pnpm-virtual-store" },
    /* On XFS pnpm's "auto" clones (FICLONE) before it would link: a clone
     * is a new inode, and an install of clones measured 1.75x the host's
     * hard-linking one (docs/benchmarks.md, "The cache"). A link is what
     * pnpm does on the host's ext4 by default, store and all. */
    { "npm_config_package_import_method", NULL, "hardlink" },
    { "npm_config_cache", "npm" },
    { "CARGO_TARGET_DIR", "cargo-target" },
    { "UV_CACHE_DIR", "uv" },
    { "PIP_CACHE_DIR", "pip" },
    { "GOCACHE", "go-build" },
    { "XDG_CACHE_HOME", "xdg" },
};

int place_cache_environment(const char *cache_path, char ***ret) {
    _cleanup_strv_free_ char **env = NULL;
    if (isempty(cache_path) || !ret)
        return -EINVAL;
    for (size_t i = 0; i < ELEMENTSOF(cache_variables); i++) {
        _cleanup_free_ char *kv = NULL;
        /* No subdirectory: a value, not a place. */
        int k = cache_variables[i].subdir
                        ? asprintf(&kv, "%s=%s/%s", cache_variables[i].name, cache_path, cache_variables[i].subdir)
                        : asprintf(&kv, "%s=%s", cache_variables[i].name, cache_variables[i].value);
        if (k < 0)
            return -ENOMEM;
        int r = strv_extend(&env, kv);
        if (r < 0)
            return r;
    }
    *ret = TAKE_PTR(env);
    return 0;
}
