/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Layout object itself: enum names, destruction, accessors, and the
 * volume naming and path scheme below the root that every layer shares.
 */
#include <stdio.h>

#include "layout-internal.h"
#include "string-table.h"
#include "util.h"

static const char *const backend_table[_BACKEND_MAX] = {
    [BACKEND_LOOP_EXT4] = "loop-ext4",
    [BACKEND_LOOP_XFS] = "loop-xfs",
    [BACKEND_LOOP_BTRFS] = "loop-btrfs",
    [BACKEND_VDO_XFS] = "vdo-xfs",
    [BACKEND_DIR] = "dir",
};

static const char *const pool_role_table[_POOL_ROLE_MAX] = {
    [POOL_STATE] = "state",
    [POOL_CONTENT] = "content",
};

static const char *const placement_policy_table[_PLACEMENT_POLICY_MAX] = {
    [PLACEMENT_SPREAD] = "spread",
    [PLACEMENT_PACK] = "pack",
};

static const char *const restart_policy_table[_RESTART_POLICY_MAX] = {
    [RESTART_ALWAYS] = "always",
    [RESTART_ON_FAILURE] = "on-failure",
    [RESTART_NEVER] = "never",
};

DEFINE_STRING_TABLE_LOOKUP(backend, Backend);
DEFINE_STRING_TABLE_LOOKUP(pool_role, PoolRole);
DEFINE_STRING_TABLE_LOOKUP(placement_policy, PlacementPolicy);
DEFINE_STRING_TABLE_LOOKUP(restart_policy, RestartPolicy);

/* The same tables for the validator's "expected one of ..." and its
 * did-you-mean, so that a name is spelled once. */
#define DEFINE_NAMES(name)                                                \
    const char *const *name##_names(size_t *ret_n) {                      \
        *ret_n = ELEMENTSOF(name##_table);                                \
        return name##_table;                                              \
    }                                                                     \
    struct __useless_struct_to_allow_trailing_semicolon__

DEFINE_NAMES(backend);
DEFINE_NAMES(placement_policy);
DEFINE_NAMES(restart_policy);

static const BackendTraits backend_traits_table[_BACKEND_MAX] = {
    [BACKEND_LOOP_EXT4] = { .fs = &fs_types[FS_TYPE_EXT4], .has_device = true, .uses_loop = true,
                            .takes_writeback = true, .takes_growth = true },
    [BACKEND_LOOP_XFS] = { .fs = &fs_types[FS_TYPE_XFS], .has_device = true, .uses_loop = true,
                           .takes_writeback = true, .takes_growth = true },
    [BACKEND_LOOP_BTRFS] = { .fs = &fs_types[FS_TYPE_BTRFS], .has_device = true, .uses_loop = true,
                             .takes_writeback = true, .takes_growth = true },
    /* A VDO volume grows when volume_size is raised and the layout
     * reloaded, not by itself. */
    [BACKEND_VDO_XFS] = { .fs = &fs_types[FS_TYPE_XFS], .has_device = true, .uses_loop = true,
                          .takes_writeback = true, .takes_vdo = true },
    [BACKEND_DIR] = {},
};

const BackendTraits *backend_traits(Backend b) {
    if ((int) b < 0 || b >= _BACKEND_MAX)
        return NULL;
    return &backend_traits_table[b];
}

const char *const layout_placeholders[] = {
    "id", "tenant", "state_dir", "content_dirs", "content_dir", "shards", "mountpoint", "volume", NULL,
};

static void pool_done(Pool *p) {
    strv_free(p->mkfs_options);
    p->mkfs_options = NULL;
    free(p->mount_options);
    p->mount_options = NULL;
    free(p->vdo.device);
    p->vdo.device = NULL;
    strv_free(p->gc.command);
    p->gc.command = NULL;
}

Layout *layout_free(Layout *l) {
    if (!l)
        return NULL;
    free(l->source);
    free(l->root);
    for (int i = 0; i < _POOL_ROLE_MAX; i++)
        pool_done(&l->pools[i]);
    WorkspaceConfig *w = &l->workspace;
    free(w->mount_root);
    free(w->cache_path);
    strv_free(w->command);
    free(w->user);
    free(w->group);
    strv_free(w->environment);
    for (size_t i = 0; i < w->n_static_workspaces; i++) {
        free(w->static_workspaces[i].id);
        free(w->static_workspaces[i].tenant);
    }
    free(w->static_workspaces);
    free(l->api.socket_path);
    free(l->api.socket_group);
    free(l->api.readonly_socket_path);
    free(l->api.metrics_listen);
    layout_marks_done(l);
    free(l);
    return NULL;
}

int layout_set_root(Layout *l, const char *root) {
    if (!l || !root || root[0] != '/')
        return -EINVAL;
    _cleanup_free_ char *r = strdup(root);
    if (!r)
        return -ENOMEM;
    /* Normalise trailing slashes so that path joins stay clean. */
    size_t n = strlen(r);
    while (n > 1 && r[n - 1] == '/')
        r[--n] = 0;
    if (l->workspace.mount_root_is_default) {
        char *m;
        if (asprintf(&m, "%s/workspaces", streq(r, "/") ? "" : r) < 0)
            return -ENOMEM;
        free(l->workspace.mount_root);
        l->workspace.mount_root = m;
    }
    free(l->root);
    l->root = TAKE_PTR(r);
    layout_marks_forget(l, "root");
    return 0;
}

const Pool *layout_pool(const Layout *l, PoolRole role) {
    if (!l || (int) role < 0 || role >= _POOL_ROLE_MAX)
        return NULL;
    if (!l->pools[role].declared)
        return NULL;
    return &l->pools[role];
}

int layout_volume_name(PoolRole role, unsigned index, char **ret) {
    const char *r = pool_role_to_string(role);
    if (!r)
        return -EINVAL;
    char *s;
    if (asprintf(&s, "%s-%u", r, index) < 0)
        return -ENOMEM;
    *ret = s;
    return 0;
}

/* The root is normalised (absolute, no trailing slash unless it is "/"). */
static int root_join(const Layout *l, const char *a, const char *b, const char *c, char **ret) {
    if (!l || !l->root)
        return -EINVAL;
    const char *root = streq(l->root, "/") ? "" : l->root;
    char *s;
    if (asprintf(&s, "%s/%s%s%s", root, a, b ?: "", c ?: "") < 0)
        return -ENOMEM;
    *ret = s;
    return 0;
}

int layout_backing_path(const Layout *l, const char *volume, char **ret) {
    if (!volume)
        return -EINVAL;
    return root_join(l, "images/", volume, ".img", ret);
}

int layout_mount_path(const Layout *l, const char *volume, char **ret) {
    if (!volume)
        return -EINVAL;
    return root_join(l, "volumes/", volume, NULL, ret);
}

int layout_record_path(const Layout *l, char **ret) {
    return root_join(l, "layoutd-state.json", NULL, NULL, ret);
}

/* A root layoutd makes files, mount points and FUSE mounts below, and
 * deletes what it made there with --destroy-data: never a system tree,
 * and never a directory that is everyone's (at most below one). */
static const char *const system_trees[] = { "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64",
                                            "/libx32", "/proc", "/sbin", "/sys", "/usr", NULL };
static const char *const shared_dirs[] = { "/", "/home", "/media", "/mnt", "/opt", "/root", "/run", "/srv",
                                           "/tmp", "/var", "/var/cache", "/var/lib", "/var/log", "/var/tmp", NULL };

const char *layout_path_why_unsafe(const char *path) {
    if (!path || path[0] != '/')
        return "it is not an absolute path";
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    for (const char *const *t = system_trees; *t; t++) {
        size_t k = strlen(*t);
        if (n >= k && strncmp(path, *t, k) == 0 && (n == k || path[k] == '/'))
            return "it is a system directory";
    }
    for (const char *const *d = shared_dirs; *d; d++)
        if (strlen(*d) == n && strncmp(path, *d, n) == 0)
            return "it is a directory others use too; give layoutd one of its own below it";
    return NULL;
}

bool layout_name_is_volume(const char *s) {
    for (PoolRole r = 0; s && r < _POOL_ROLE_MAX; r++) {
        const char *role = pool_role_to_string(r);
        size_t n = strlen(role);
        if (strncmp(s, role, n) != 0 || s[n] != '-' || !s[n + 1])
            continue;
        const char *d = s + n + 1;
        while (*d >= '0' && *d <= '9')
            d++;
        if (!*d)
            return true;
    }
    return false;
}
