/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The layout validator: walks the node tree (layout-node.c) against the
 * schema of docs/layout.md, fills a Layout with normalised values and
 * defaults, and reports every problem it finds with file:line:column.
 * It never stops at the first error: a checker that makes the operator
 * fix one typo per run is a checker nobody likes.
 */
#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>

#include "layout-parser.h"
#include "util.h"

#define DEFAULT_ROOT "/var/lib/layoutd"
#define DEFAULT_COMMAND_0 "/usr/libexec/layoutd/layoutd-wsfs"

#define MAX_VOLUMES 1024
#define MAX_SHARDS 64
#define MAX_WORKSPACES_PER_VOLUME 1024
#define MIN_BLOCK_MAP_CACHE (128 * MIB)
#define MAX_STATIC_WORKSPACES 4096
/* sun_path is 108 bytes including the NUL. */
#define SOCKET_PATH_MAX 107

/* ---- pools ---- */

static const char *const pool_keys[] = {
    "backend", "volume_size", "min_volumes", "max_volumes", "workspaces_per_volume", "direct_io",
    "preallocate", "writeback", "mkfs_options", "mount_options", "placement", "tenant_isolation", "workspace_reserve",
    "workspace_reserve_inodes", "quota_overcommit", "slow_flush_factor", "slow_flush_floor", "shards", "vdo",
    "capacity", "growth", "gc", NULL,
};
static const char *const vdo_keys[] = {
    "logical_size", "compression", "deduplication", "fstrim_interval", "block_map_cache", "device", NULL,
};
static const char *const writeback_keys[] = { "max_ratio", "max_bytes", "strict_limit", NULL };
/* Keys that only make sense where workspaces are placed. */
static const char *const state_only_keys[] = {
    "workspaces_per_volume", "placement", "tenant_isolation", "workspace_reserve", "workspace_reserve_inodes",
    "quota_overcommit", "slow_flush_factor", "slow_flush_floor", NULL,
};
/* One of an enum's names, spelled only in its string table (layout.c). */
#define GET_ENUM(p, v, key, name, out)                                    \
    ({                                                                    \
        size_t _n;                                                        \
        const char *const *_names = name##_names(&_n);                    \
        lp_get_enum(p, v, key, _names, _n, out);                          \
    })

static void pool_defaults(Pool *pool, PoolRole role) {
    *pool = (Pool) {
        .role = role,
        .backend = BACKEND_LOOP_EXT4,
        .volume_size = role == POOL_STATE ? GIB : 4 * GIB,
        .min_volumes = 1,
        .max_volumes = role == POOL_STATE ? 16 : 1,
        .workspaces_per_volume = role == POOL_STATE ? 4 : 0,
        .direct_io = true,
        .writeback = { .max_ratio = -1, .max_bytes = 0, .strict_limit = -1 },
        .placement = PLACEMENT_SPREAD,
        .workspace_reserve = role == POOL_STATE ? 64 * MIB : 0,
        .workspace_reserve_inodes = role == POOL_STATE ? 4096 : 0,
        .quota_overcommit = role == POOL_STATE ? 100 : 0,
        /* Off until its effect is measured (docs/placement.md). */
        .slow_flush_factor = 0,
        .slow_flush_floor = role == POOL_STATE ? 20 * USEC_PER_MSEC : 0,
        .shards = 1,
        .capacity = { .warn = 80, .critical = 95 },
        .growth = { .threshold = 80, .host_reserve_percent = 5 },
        .gc = { .interval = 3600 * USEC_PER_SEC, .grace = 3600 * USEC_PER_SEC, .free_threshold = 20 },
    };
}

static void parse_writeback(Parser *p, const LayoutNode *n, WritebackLimits *wb) {
    if (!lp_map_check(p, n, writeback_keys, NULL, "writeback"))
        return;
    LayoutNode *v;
    uint64_t u;
    bool b;
    if ((v = lp_map_get(n, "max_ratio", NULL)) && lp_get_uint(p, v, "writeback.max_ratio", 0, 100, &u))
        wb->max_ratio = (int) u;
    if ((v = lp_map_get(n, "max_bytes", NULL)))
        (void) lp_get_size(p, v, "writeback.max_bytes", &wb->max_bytes);
    if ((v = lp_map_get(n, "strict_limit", NULL)) && lp_get_bool(p, v, "writeback.strict_limit", &b))
        wb->strict_limit = b;
}

static void parse_vdo(Parser *p, const LayoutNode *n, Pool *pool, bool *ret_logical_given) {
    if (!lp_map_check(p, n, vdo_keys, NULL, "vdo"))
        return;
    LayoutNode *v, *k;
    VdoOptions *o = &pool->vdo;
    if ((v = lp_map_get(n, "logical_size", NULL)) && lp_get_size(p, v, "vdo.logical_size", &o->logical_size)) {
        *ret_logical_given = true;
        if (o->logical_size % (4 * KIB) != 0)
            lp_err(p, v, "vdo.logical_size: must be a multiple of 4 KiB, got %s", v->value);
        else if (o->logical_size > MAX_VOLUME_SIZE)
            lp_err(p, v, "vdo.logical_size: must be at most 1024TiB");
    }
    if ((v = lp_map_get(n, "compression", NULL)))
        (void) lp_get_bool(p, v, "vdo.compression", &o->compression);
    if ((v = lp_map_get(n, "deduplication", NULL)))
        (void) lp_get_bool(p, v, "vdo.deduplication", &o->deduplication);
    if ((v = lp_map_get(n, "fstrim_interval", NULL))) {
        usec_t t;
        /* Online discard stalls XFS on VDO (dm-vdo/vdo#57); a periodic
         * fstrim is the advice, but not so often that it is the load. */
        if (lp_get_duration(p, v, "vdo.fstrim_interval", &t)) {
            if (t != 0 && t < 60 * USEC_PER_SEC)
                lp_err(p, v, "vdo.fstrim_interval: must be 0 (off) or at least 1min, got '%s'", v->value);
            else
                o->fstrim_interval = t;
        }
    }
    if ((v = lp_map_get(n, "block_map_cache", NULL)) && lp_get_size(p, v, "vdo.block_map_cache", &o->block_map_cache)) {
        if (o->block_map_cache < MIN_BLOCK_MAP_CACHE)
            lp_err(p, v, "vdo.block_map_cache: must be at least 128MiB (the dm-vdo minimum), got %s", v->value);
        else if (o->block_map_cache % (4 * KIB) != 0)
            lp_err(p, v, "vdo.block_map_cache: must be a multiple of 4 KiB, got %s", v->value);
    }
    if ((v = lp_map_get(n, "device", &k)) && lp_get_path(p, v, "vdo.device", &o->device)) {
        if (strncmp(o->device, "/dev/", 5) != 0)
            lp_err(p, v, "vdo.device: expected a block device below /dev/, got '%s'", o->device);
    }
}

static void parse_pool(Parser *p, const LayoutNode *n, PoolRole role, Pool *pool) {
    char where[64];
    snprintf(where, sizeof where, "pool '%s'", pool_role_to_string(role));
    pool->declared = true;

    /* vdo keys directly under the pool are reported below with a hint. */
    if (!lp_map_check(p, n, pool_keys, vdo_keys, where))
        return;

    LayoutNode *v, *k;
    bool backend_ok = true;
    int e;
    if ((v = lp_map_get(n, "backend", NULL))) {
        backend_ok = GET_ENUM(p, v, "backend", backend, &e);
        if (backend_ok)
            pool->backend = (Backend) e;
    }
    const Backend b = pool->backend;
    const char *bname = backend_to_string(b);
    const BackendTraits *traits = backend_ok ? backend_traits(b) : NULL;
    const bool is_dir = traits && !traits->has_device;
    const bool is_vdo = traits && traits->takes_vdo;

    if (is_dir) {
        pool->direct_io = false;
        pool->volume_size = 0;
    }
    if (is_vdo) {
        pool->has_vdo = true;
        pool->vdo = (VdoOptions) {
            .compression = true,
            .deduplication = true,
            .fstrim_interval = 86400 * USEC_PER_SEC,
            .block_map_cache = 128 * MIB,
        };
    }

    /* Keys the role does not have. */
    for (size_t i = 0; i < lp_map_pairs(n); i++) {
        const char *key = lp_map_key(n, i);
        const LayoutNode *kn = n->items[2 * i];
        if (!key)
            continue;
        if (role == POOL_CONTENT && strv_contains(state_only_keys, key))
            lp_err(p, kn, "'%s' applies to the state pool only: the content pool is shared by every workspace "
                "and nothing is placed on it", key);
        if (role == POOL_STATE && streq(key, "gc"))
            lp_err(p, kn, "'gc' applies to the content pool only: the state pool holds no shared objects");
        if (role == POOL_STATE && streq(key, "shards"))
            lp_err(p, kn, "'shards' applies to the content pool only; the state pool grows by volumes "
                "(min_volumes/max_volumes)");
        if (strv_contains(vdo_keys, key)) {
            if (is_vdo)
                lp_err(p, kn, "'%s' is a VDO option: it belongs under 'vdo:' of this pool", key);
            else
                lp_err(p, kn, "'%s' is a VDO option: it belongs under 'vdo:' of a pool with backend vdo-xfs "
                    "(this pool's backend is %s)", key, backend_ok ? bname : "invalid");
        }
    }

    bool size_given = false;
    if ((v = lp_map_get(n, "volume_size", &k))) {
        if (is_dir)
            lp_err(p, k, "volume_size has no meaning for backend dir: a dir volume is a plain directory "
                "with no size of its own; remove the key");
        else if (lp_get_size(p, v, "volume_size", &pool->volume_size)) {
            size_given = true;
            if (pool->volume_size % (4 * KIB) != 0) {
                lp_err(p, v, "volume_size: must be a multiple of 4 KiB, got %s", v->value);
                size_given = false;
            } else if (pool->volume_size > MAX_VOLUME_SIZE) {
                lp_err(p, v, "volume_size: must be at most 1024TiB, got %s", v->value);
                size_given = false;
            }
        }
    }
    if (traits && traits->fs) {
        if (pool->volume_size < traits->fs->min_size && (size_given || !v))
            lp_err(p, v ?: n, "volume_size: %s needs at least %s per volume, got %s", traits->fs->display_name,
                traits->fs->min_size_text, v ? v->value : "the default");
    }

    LayoutNode *minv = lp_map_get(n, "min_volumes", NULL), *maxv = lp_map_get(n, "max_volumes", NULL);
    bool min_ok = true, max_ok = true;
    if (minv)
        min_ok = lp_get_unsigned(p, minv, "min_volumes", 0, MAX_VOLUMES, &pool->min_volumes);
    if (maxv)
        max_ok = lp_get_unsigned(p, maxv, "max_volumes", 1, MAX_VOLUMES, &pool->max_volumes);

    if (role == POOL_STATE && (v = lp_map_get(n, "workspaces_per_volume", NULL)))
        (void) lp_get_unsigned(p, v, "workspaces_per_volume", 1, MAX_WORKSPACES_PER_VOLUME,
                            &pool->workspaces_per_volume);

    if ((v = lp_map_get(n, "direct_io", &k))) {
        bool d;
        if (lp_get_bool(p, v, "direct_io", &d)) {
            if (is_dir && d)
                lp_err(p, v, "direct_io: the dir backend has no loop device, so direct I/O cannot be turned "
                    "on; remove the key or set it to false");
            else
                pool->direct_io = d;
        }
    }
    /* A backing file of our own that the loop device writes into: not the
     * dir backend (no file), not vdo-xfs (dm-vdo owns the allocation of
     * its physical file, and may sit on a block device). */
    if ((v = lp_map_get(n, "preallocate", &k))) {
        bool pa;
        if (lp_get_bool(p, v, "preallocate", &pa)) {
            if (pa && traits && (!traits->uses_loop || traits->takes_vdo))
                lp_err(p, v, "preallocate: applies to the backing files of loop-ext4, loop-xfs and loop-btrfs; "
                    "backend %s has none of its own to allocate", bname);
            else
                pool->preallocate = pa;
        }
    }
    if ((v = lp_map_get(n, "writeback", &k))) {
        if (is_dir)
            lp_err(p, k, "writeback limits need a loop device of the volume's own; backend dir has none");
        else
            parse_writeback(p, v, &pool->writeback);
    }
    if ((v = lp_map_get(n, "mkfs_options", &k))) {
        if (is_dir)
            lp_err(p, k, "mkfs_options: backend dir makes no filesystem; remove the key");
        else
            (void) lp_get_strv(p, v, "mkfs_options", &pool->mkfs_options);
    }
    if ((v = lp_map_get(n, "mount_options", &k))) {
        if (is_dir)
            lp_err(p, k, "mount_options: backend dir mounts nothing; remove the key");
        else if (lp_get_string(p, v, "mount_options", &pool->mount_options)) {
            if (strpbrk(pool->mount_options, " \t"))
                lp_err(p, v, "mount_options: expected a comma-separated list without spaces, got '%s'",
                    pool->mount_options);
            /* Online discard stalls XFS on VDO; the periodic fstrim does it. */
            else if (is_vdo && (streq(pool->mount_options, "discard") ||
                                strstr(pool->mount_options, "discard,") == pool->mount_options ||
                                strstr(pool->mount_options, ",discard")))
                lp_err(p, v, "mount_options: 'discard' on XFS over VDO stalls all I/O during deletes; use "
                    "vdo.fstrim_interval instead");
            else
                for (const char *o = pool->mount_options; *o;) {
                    const char *end = strchrnul(o, ',');
                    size_t len = (size_t) (end - o);
                    /* Volumes are always nosuid,nodev (what tenants write
                     * must not act as a set-id binary or a device). */
                    if ((len == 4 && strncmp(o, "suid", 4) == 0) || (len == 3 && strncmp(o, "dev", 3) == 0)) {
                        lp_err(p, v, "mount_options: '%.*s' is refused: volumes are always mounted nosuid,nodev",
                               (int) len, o);
                        break;
                    }
                    o = *end ? end + 1 : end;
                }
        }
    }
    if (role == POOL_STATE) {
        if ((v = lp_map_get(n, "placement", NULL)) && GET_ENUM(p, v, "placement", placement_policy, &e))
            pool->placement = (PlacementPolicy) e;
        if ((v = lp_map_get(n, "tenant_isolation", NULL)))
            (void) lp_get_bool(p, v, "tenant_isolation", &pool->tenant_isolation);
        /* "150%": whole percents, as capacity's thresholds; below 100 a
         * volume keeps room its quotas can never claim, above it they
         * promise more than it holds (enforced per workspace anyway). */
        if ((v = lp_map_get(n, "quota_overcommit", NULL)))
            (void) lp_get_percent(p, v, "quota_overcommit", 10, 10000, &pool->quota_overcommit);
        /* Placement by measured flush cost (docs/placement.md): a factor
         * of 1 would call half of any two equal volumes slow on noise, so
         * it starts at 2; the floor keeps idle volumes' jitter (a tenth of
         * a millisecond against one) out of it. */
        if ((v = lp_map_get(n, "slow_flush_factor", NULL)) &&
            lp_get_unsigned(p, v, "slow_flush_factor", 0, 1000, &pool->slow_flush_factor) &&
            pool->slow_flush_factor == 1)
            lp_err(p, v, "slow_flush_factor: must be 0 (off) or at least 2, got '%s'", v->value);
        if ((v = lp_map_get(n, "slow_flush_floor", NULL)))
            (void) lp_get_duration_range(p, v, "slow_flush_floor", USEC_PER_MSEC, 60 * USEC_PER_SEC,
                                         &pool->slow_flush_floor);
        if ((v = lp_map_get(n, "workspace_reserve", NULL)) &&
            lp_get_size(p, v, "workspace_reserve", &pool->workspace_reserve) && backend_ok && !is_dir &&
            pool->workspace_reserve > pool->volume_size)
            lp_err(p, v, "workspace_reserve: %s is more than the volume_size; no workspace would fit", v->value);
        /* The inode reserve follows the filesystem's row. By default it
         * is kept only where the inode count is fixed at mkfs time (ext4;
         * dir too: the host filesystem may be ext4): XFS and btrfs
         * allocate inodes as they go, so their default is 0 and no volume
         * of theirs is refused for "no-inodes". XFS still reports a limit
         * (f_files, up to its imaxpct), so a reserve given for it is kept;
         * btrfs reports none (f_files = 0), where any reserve would refuse
         * every volume. */
        const FsType *fs = traits ? traits->fs : NULL;
        if (fs && !fs->fixed_inodes)
            pool->workspace_reserve_inodes = 0;
        if ((v = lp_map_get(n, "workspace_reserve_inodes", &k))) {
            if (fs && !fs->counts_inodes)
                lp_err(p, k, "workspace_reserve_inodes: %s allocates inodes as it needs them and reports no "
                    "inode count, so there is nothing to reserve; remove the key", fs->display_name);
            else
                (void) lp_get_uint(p, v, "workspace_reserve_inodes", 0, UINT32_MAX,
                                   &pool->workspace_reserve_inodes);
        }
    }

    if (role == POOL_CONTENT) {
        bool shards_ok = true;
        if ((v = lp_map_get(n, "shards", NULL)))
            shards_ok = lp_get_unsigned(p, v, "shards", 1, MAX_SHARDS, &pool->shards);
        /* One volume per shard, always: shard i lives on content-i, and a
         * workspace's daemon is handed all of them. */
        if (shards_ok) {
            if (minv && min_ok && pool->min_volumes != pool->shards)
                lp_err(p, minv, "min_volumes: the content pool has exactly one volume per shard, so min_volumes "
                    "must equal shards (%u); remove the key", pool->shards);
            if (maxv && max_ok && pool->max_volumes != pool->shards)
                lp_err(p, maxv, "max_volumes: the content pool has exactly one volume per shard, so max_volumes "
                    "must equal shards (%u); remove the key", pool->shards);
        }
        pool->min_volumes = pool->max_volumes = pool->shards;
    } else if (minv && maxv && min_ok && max_ok && pool->min_volumes > pool->max_volumes)
        lp_err(p, minv, "min_volumes (%u) must not be more than max_volumes (%u)", pool->min_volumes,
            pool->max_volumes);
    else if (minv && !maxv && min_ok && pool->min_volumes > pool->max_volumes)
        pool->max_volumes = pool->min_volumes; /* the default bound grows with an explicit minimum */

    if ((v = lp_map_get(n, "capacity", NULL)))
        lp_parse_capacity(p, v, pool);
    /* After volume_size: growth.max_size defaults to a multiple of it. */
    if ((v = lp_map_get(n, "growth", NULL)) && backend_ok)
        lp_parse_growth(p, v, pool);
    if (role == POOL_CONTENT && (v = lp_map_get(n, "gc", NULL)))
        lp_parse_gc(p, v, pool);

    LayoutNode *vk = NULL;
    bool logical_given = false;
    if ((v = lp_map_get(n, "vdo", &vk))) {
        if (!is_vdo) {
            if (backend_ok)
                lp_err(p, vk, "'vdo:' applies only to backend vdo-xfs (this pool's backend is %s)", bname);
        } else
            parse_vdo(p, v, pool, &logical_given);
    }
    if (is_vdo) {
        VdoOptions *o = &pool->vdo;
        if (!logical_given) {
            /* Deduplication is why one picks VDO: present 3x the physical
             * size by default, the ratio seen on dependency trees. */
            o->logical_size = pool->volume_size * 3;
        } else if (o->logical_size < pool->volume_size) {
            LayoutNode *lv = lp_map_get(v, "logical_size", NULL);
            lp_err(p, lv, "vdo.logical_size (%s) must be at least volume_size (%s)", lv->value,
                lp_map_get(n, "volume_size", NULL) ? lp_map_get(n, "volume_size", NULL)->value : "the default");
        }
        if (o->device && pool->max_volumes != 1)
            lp_err(p, lp_map_get(v, "device", NULL),
                "vdo.device: a block device holds exactly one volume, but this pool may have %u "
                "(set %s to 1)", pool->max_volumes, role == POOL_CONTENT ? "shards" : "max_volumes");
    }
}

static void parse_pools(Parser *p, const LayoutNode *n, const LayoutNode *key, Layout *l) {
    static const char *const roles[] = { "state", "content", NULL };
    if (!lp_map_check(p, n, roles, NULL, "pools"))
        return;
    for (PoolRole r = 0; r < _POOL_ROLE_MAX; r++) {
        LayoutNode *v = lp_map_get(n, pool_role_to_string(r), NULL);
        if (v)
            parse_pool(p, v, r, &l->pools[r]);
    }
    if (!l->pools[POOL_STATE].declared)
        lp_err(p, key, "pools: the state pool must be declared (pools: {state: {...}})");
}

/* ---- workspace ---- */

static const char *const workspace_keys[] = {
    "mount_root", "command", "user", "group", "environment", "dir_mode", "restart", "backoff", "crash_loop",
    "ready_timeout", "stop_timeout", "hang_timeout", "restart_on_hang", "workspaces", "on_agent_stop",
    "oom_score_adjust", "package_store", "resources", "cache", "cache_path", NULL,
};
static const char *const on_agent_stop_names[] = { "keep", "stop" };
static const char *const resources_keys[] = { "memory_max", "memory_high", "cpu_weight", "io_weight", "tasks_max", NULL };

/* A size, or "infinity" for no limit. */
static bool get_limit(Parser *p, const LayoutNode *n, const char *key, uint64_t *out) {
    if (n->type == LAYOUT_NODE_SCALAR && !n->invalid && n->value && streq(n->value, "infinity")) {
        *out = UINT64_MAX;
        return true;
    }
    return lp_get_size(p, n, key, out);
}

static void parse_resources(Parser *p, const LayoutNode *n, WorkspaceResources *r) {
    if (!lp_map_check(p, n, resources_keys, NULL, "resources"))
        return;
    LayoutNode *v, *mh = lp_map_get(n, "memory_high", NULL), *mm = lp_map_get(n, "memory_max", NULL);
    bool high_ok = !mh || get_limit(p, mh, "resources.memory_high", &r->memory_high);
    bool max_ok = !mm || get_limit(p, mm, "resources.memory_max", &r->memory_max);
    if (high_ok && max_ok && r->memory_high != UINT64_MAX && r->memory_max != UINT64_MAX &&
        r->memory_high > r->memory_max)
        lp_err(p, mh ?: mm, "resources.memory_high (throttling) must not be above resources.memory_max (the OOM "
               "kill), or it never acts");
    if (max_ok && r->memory_max < 64 * MIB)
        lp_err(p, mm, "resources.memory_max: at least 64MiB, or a FUSE daemon cannot hold its own buffers");
    if ((v = lp_map_get(n, "cpu_weight", NULL)))
        (void) lp_get_unsigned(p, v, "resources.cpu_weight", 1, 10000, &r->cpu_weight);
    if ((v = lp_map_get(n, "io_weight", NULL)))
        (void) lp_get_unsigned(p, v, "resources.io_weight", 1, 10000, &r->io_weight);
    if ((v = lp_map_get(n, "tasks_max", NULL))) {
        if (v->type == LAYOUT_NODE_SCALAR && !v->invalid && v->value && streq(v->value, "infinity"))
            r->tasks_max = UINT64_MAX;
        else
            (void) lp_get_uint(p, v, "resources.tasks_max", 16, UINT32_MAX, &r->tasks_max);
    }
}

/* The same grammar as the expansion in src/supervise/argv.c: "{name}" is a
 * placeholder, "{{" and "}}" are literal braces, a lone "}" is a typo.
 * Returns false if the element has a problem (reported). */
static bool check_placeholders(Parser *p, const LayoutNode *n, const char *arg, bool allowed) {
    for (const char *c = arg; *c;) {
        if ((c[0] == '{' && c[1] == '{') || (c[0] == '}' && c[1] == '}')) {
            c += 2;
            continue;
        }
        if (c[0] == '}') {
            lp_err(p, n, "command: stray '}' in '%s' (write '}}' for a literal brace)", arg);
            return false;
        }
        if (c[0] != '{') {
            c++;
            continue;
        }
        const char *e = strchr(c + 1, '}');
        if (!e) {
            lp_err(p, n, "command: unterminated placeholder in '%s': expected {name} (write '{{' for a literal "
                "brace)", arg);
            return false;
        }
        if (!allowed) {
            lp_err(p, n, "command[0]: placeholders are not allowed in the program path");
            return false;
        }
        size_t l = (size_t) (e - c - 1);
        char name[32];
        if (l >= sizeof name) {
            lp_err(p, n, "command: unknown placeholder '%.*s' in '%s'", 40, c, arg);
            return false;
        }
        memcpy(name, c + 1, l);
        name[l] = 0;
        if (!strv_contains(layout_placeholders, name)) {
            _cleanup_free_ char *list = lp_join_keys(layout_placeholders);
            const char *d = lp_did_you_mean(name, layout_placeholders);
            if (!list)
                lp_oom(p);
            else if (d)
                lp_err(p, n, "command: unknown placeholder '{%s}'; did you mean '{%s}'? (known: %s)", name, d, list);
            else
                lp_err(p, n, "command: unknown placeholder '{%s}'; known placeholders: %s", name, list);
            return false;
        }
        c = e + 1;
    }
    return true;
}

static void parse_command(Parser *p, const LayoutNode *n, const LayoutNode *key, WorkspaceConfig *w) {
    if (n->invalid)
        return;
    if (n->type != LAYOUT_NODE_SEQUENCE) {
        lp_err(p, n, "command: expected a list (the argv, e.g. [\"/usr/bin/daemon\", \"{mountpoint}\"]), "
            "got %s; a command is never a shell string", lp_node_kind(n));
        return;
    }
    if (n->n_items == 0) {
        lp_err(p, n, "command: must not be empty; command[0] is the absolute path of the daemon");
        return;
    }
    char **argv = NULL;
    if (!lp_get_strv(p, n, "command", &argv))
        return;
    bool ok = true;
    if (argv[0][0] != '/') {
        lp_err(p, n->items[0], "command[0]: must be an absolute path (the daemon is not looked up in $PATH), "
            "got '%s'", argv[0]);
        ok = false;
    } else if (!check_placeholders(p, n->items[0], argv[0], false))
        ok = false;
    for (size_t i = 1; argv[i]; i++)
        if (!check_placeholders(p, n->items[i], argv[i], true))
            ok = false;
    if (!ok) {
        strv_free(argv);
        return;
    }
    strv_free(w->command);
    w->command = argv;
    p->command_given = true;
}

static bool env_name_is_valid(const char *s) {
    if (!s || !(isalpha((unsigned char) *s) || *s == '_'))
        return false;
    for (; *s; s++)
        if (!(isalnum((unsigned char) *s) || *s == '_'))
            return false;
    return true;
}

/* What the agent hands every daemon (layoutd(8), ENVIRONMENT; the
 * supervisor's spawn_build_environment and agent-workspaces.c). */
static const char *const agent_environment[] = {
    "LAYOUTD_WORKSPACE", "LAYOUTD_SHARDS", "LAYOUTD_STATS_FILE", "LAYOUTD_STATE_VOLUME", "LAYOUTD_STATE_VOLUME_UUID",
    "LAYOUTD_CONTENT_UUIDS", "LAYOUTD_STORE_DIR", NULL,
};

static void parse_environment(Parser *p, const LayoutNode *n, WorkspaceConfig *w) {
    if (!lp_map_check(p, n, NULL, NULL, "environment"))
        return;
    for (size_t i = 0; i < lp_map_pairs(n); i++) {
        const char *key = lp_map_key(n, i);
        LayoutNode *kn = n->items[2 * i], *vn = n->items[2 * i + 1];
        if (!key)
            continue;
        /* Skip duplicates: map_check reported them. */
        if (lp_map_get(n, key, NULL) != vn)
            continue;
        if (!env_name_is_valid(key)) {
            lp_err(p, kn, "environment: invalid variable name '%s': expected [A-Za-z_][A-Za-z0-9_]*", key);
            continue;
        }
        /* The agent's own: one set here would be overridden, or worse,
         * hand a daemon a package store its quota forbids. Other LAYOUTD_
         * names (a daemon's own knobs) are the daemon's business. */
        if (strv_contains(agent_environment, key)) {
            lp_err(p, kn, "environment: '%s' is set by layoutd itself for every daemon (layoutd(8), ENVIRONMENT)",
                   key);
            continue;
        }
        _cleanup_free_ char *val = NULL, *kv = NULL;
        if (!lp_get_string(p, vn, key, &val))
            continue;
        if (asprintf(&kv, "%s=%s", key, val) < 0 || strv_extend(&w->environment, kv) < 0) {
            kv = NULL;
            lp_oom(p);
            return;
        }
    }
}

static void parse_static_workspaces(Parser *p, const LayoutNode *n, WorkspaceConfig *w) {
    static const char *const keys[] = { "id", "tenant", "quota", NULL };
    if (n->invalid)
        return;
    if (n->type != LAYOUT_NODE_SEQUENCE) {
        lp_err(p, n, "workspaces: expected a list of {id, tenant} mappings, got %s", lp_node_kind(n));
        return;
    }
    if (n->n_items > MAX_STATIC_WORKSPACES) {
        lp_err(p, n, "workspaces: at most %d static workspaces", MAX_STATIC_WORKSPACES);
        return;
    }
    w->static_workspaces = calloc(MAX(n->n_items, (size_t) 1), sizeof(StaticWorkspace));
    if (!w->static_workspaces) {
        lp_oom(p);
        return;
    }
    /* Every id seen, valid or not, so that a duplicate is reported even
     * when the first occurrence had another problem. */
    const LayoutNode *ids[MAX_STATIC_WORKSPACES];
    size_t n_ids = 0;
    for (size_t i = 0; i < n->n_items; i++) {
        const LayoutNode *item = n->items[i];
        if (!lp_map_check(p, item, keys, NULL, "a static workspace"))
            continue;
        StaticWorkspace *s = &w->static_workspaces[w->n_static_workspaces];
        LayoutNode *v, *k;
        bool ok = true;

        if (!(v = lp_map_get(item, "id", NULL))) {
            lp_err(p, item, "a static workspace needs an 'id'");
            ok = false;
        } else if (lp_get_string(p, v, "id", &s->id)) {
            if (!layout_name_is_valid(s->id, LAYOUT_WORKSPACE_ID_MAX)) {
                lp_err(p, v, "id: invalid workspace id '%s': expected [a-z0-9][a-z0-9-]*, at most %d characters",
                    s->id, LAYOUT_WORKSPACE_ID_MAX);
                ok = false;
            } else if (layout_name_is_volume(s->id)) {
                lp_err(p, v, "id: '%s' is the name of a volume; a workspace cannot take it", s->id);
                ok = false;
            }
            for (size_t j = 0; j < n_ids; j++)
                if (streq(ids[j]->value, s->id)) {
                    lp_err(p, v, "id: duplicate workspace id '%s' (first given at line %u, column %u)", s->id,
                        ids[j]->line, ids[j]->column);
                    ok = false;
                    break;
                }
            ids[n_ids++] = v;
        } else
            ok = false;

        if ((v = lp_map_get(item, "tenant", NULL)) && lp_get_string(p, v, "tenant", &s->tenant) &&
            !layout_name_is_valid(s->tenant, LAYOUT_NAME_MAX)) {
            lp_err(p, v, "tenant: invalid tenant name '%s': expected [a-z0-9][a-z0-9-]*, at most %d characters",
                s->tenant, LAYOUT_NAME_MAX);
            ok = false;
        }
        /* Whether this host can enforce it is placement's question (the
         * kernel, the state pool's filesystem): a layout stays portable. */
        if ((v = lp_map_get(item, "quota", &k)))
            ok = lp_get_size(p, v, "quota", &s->quota) && ok;
        if (!ok) {
            free(s->id);
            free(s->tenant);
            *s = (StaticWorkspace) {};
            continue;
        }
        w->n_static_workspaces++;
    }
}

static void parse_workspace(Parser *p, const LayoutNode *n, Layout *l) {
    static const char *const backoff_keys[] = { "initial", "max", "reset_after", NULL };
    static const char *const crash_keys[] = { "deaths", "interval", NULL };
    WorkspaceConfig *w = &l->workspace;

    if (!lp_map_check(p, n, workspace_keys, NULL, "workspace"))
        return;
    LayoutNode *v, *k;
    int e;
    const char *why;
    if ((v = lp_map_get(n, "mount_root", NULL)) && lp_get_path(p, v, "mount_root", &w->mount_root)) {
        w->mount_root_is_default = false;
        if ((why = layout_path_why_unsafe(w->mount_root)))
            lp_err(p, v, "mount_root: workspaces cannot be mounted below %s: %s", w->mount_root, why);
    }
    if ((v = lp_map_get(n, "command", &k)))
        parse_command(p, v, k, w);
    if ((v = lp_map_get(n, "user", NULL)))
        (void) lp_get_account(p, v, "user", &w->user);
    if ((v = lp_map_get(n, "group", NULL)))
        (void) lp_get_account(p, v, "group", &w->group);
    if ((v = lp_map_get(n, "environment", NULL)))
        parse_environment(p, v, w);
    if ((v = lp_map_get(n, "dir_mode", NULL)) && lp_get_mode(p, v, "dir_mode", &w->dir_mode)) {
        /* A workspace's directory is its owner's: set-id bits would hand
         * files to other ids, world-writable would let anyone in. */
        if (w->dir_mode & 07000)
            lp_err(p, v, "dir_mode: %04o has setuid, setgid or sticky bits; a workspace directory takes none "
                   "(use e.g. \"0750\")", (unsigned) w->dir_mode);
        else if (w->dir_mode & 0002)
            lp_err(p, v, "dir_mode: %04o is world-writable; anyone could write into every workspace "
                   "(use e.g. \"0750\")", (unsigned) w->dir_mode);
    }
    if ((v = lp_map_get(n, "restart", NULL)) && GET_ENUM(p, v, "restart", restart_policy, &e))
        w->restart = (RestartPolicy) e;
    if ((v = lp_map_get(n, "backoff", NULL)) && lp_map_check(p, v, backoff_keys, NULL, "backoff")) {
        LayoutNode *i = lp_map_get(v, "initial", NULL), *m = lp_map_get(v, "max", NULL), *r;
        bool i_ok = !i || lp_get_duration_range(p, i, "backoff.initial", 100 * USEC_PER_MSEC, 86400 * USEC_PER_SEC,
                                             &w->backoff_initial);
        bool m_ok = !m || lp_get_duration_range(p, m, "backoff.max", 100 * USEC_PER_MSEC, 86400 * USEC_PER_SEC,
                                             &w->backoff_max);
        if (i_ok && m_ok && w->backoff_initial > w->backoff_max) {
            if (m)
                lp_err(p, i ?: m, "backoff: initial (%s) must not be more than max (%s)",
                    i ? i->value : "the default 1s", m->value);
            else /* an explicit initial above the default max raises max */
                w->backoff_max = w->backoff_initial;
        }
        if ((r = lp_map_get(v, "reset_after", NULL)))
            (void) lp_get_duration_range(p, r, "backoff.reset_after", USEC_PER_SEC, 7 * 86400 * USEC_PER_SEC,
                                      &w->backoff_reset_after);
    }
    if ((v = lp_map_get(n, "crash_loop", NULL)) && lp_map_check(p, v, crash_keys, NULL, "crash_loop")) {
        LayoutNode *d = lp_map_get(v, "deaths", NULL), *i = lp_map_get(v, "interval", NULL);
        if (d)
            (void) lp_get_unsigned(p, d, "crash_loop.deaths", 1, 1000, &w->crashloop_deaths);
        if (i)
            (void) lp_get_duration_range(p, i, "crash_loop.interval", USEC_PER_SEC, 7 * 86400 * USEC_PER_SEC,
                                      &w->crashloop_interval);
    }
    if ((v = lp_map_get(n, "ready_timeout", NULL)))
        (void) lp_get_duration_range(p, v, "ready_timeout", USEC_PER_MSEC, 3600 * USEC_PER_SEC, &w->ready_timeout);
    if ((v = lp_map_get(n, "stop_timeout", NULL)))
        (void) lp_get_duration_range(p, v, "stop_timeout", USEC_PER_MSEC, 3600 * USEC_PER_SEC, &w->stop_timeout);
    if ((v = lp_map_get(n, "hang_timeout", NULL)))
        (void) lp_get_duration_range(p, v, "hang_timeout", 0, 86400 * USEC_PER_SEC, &w->hang_timeout);
    LayoutNode *rk = NULL;
    if ((v = lp_map_get(n, "restart_on_hang", &rk)) && lp_get_bool(p, v, "restart_on_hang", &w->restart_on_hang) &&
        w->restart_on_hang && w->hang_timeout == 0)
        lp_err(p, v, "restart_on_hang: needs a hang_timeout other than 0 (0 turns the hang watch off)");
    if ((v = lp_map_get(n, "workspaces", NULL)))
        parse_static_workspaces(p, v, w);
    if ((v = lp_map_get(n, "on_agent_stop", NULL)) &&
        lp_get_enum(p, v, "on_agent_stop", on_agent_stop_names, ELEMENTSOF(on_agent_stop_names), &e))
        w->stop_with_agent = e == 1;
    int64_t adj;
    if ((v = lp_map_get(n, "oom_score_adjust", NULL)) && lp_get_int(p, v, "oom_score_adjust", -1000, 1000, &adj))
        w->oom_score_adjust = (int) adj;
    if ((v = lp_map_get(n, "package_store", NULL)))
        (void) lp_get_bool_or(p, v, "package_store", "auto", &w->package_store, &w->package_store_auto);
    if ((v = lp_map_get(n, "resources", NULL)))
        parse_resources(p, v, &w->resources);
    if ((v = lp_map_get(n, "cache", NULL)))
        (void) lp_get_bool(p, v, "cache", &w->cache);
    /* One component: the cache is mounted on a directory of the workspace's
     * root, never through a path of several that its users could bend. */
    if ((v = lp_map_get(n, "cache_path", NULL)) && lp_get_string(p, v, "cache_path", &w->cache_path) &&
        (strchr(w->cache_path, '/') || streq(w->cache_path, ".") || streq(w->cache_path, "..") ||
         isempty(w->cache_path) || strlen(w->cache_path) > 255 || streq(w->cache_path, ".layoutd-store") ||
         streq(w->cache_path, ".layoutd-export")))
        lp_err(p, v,
               "cache_path: must be one name inside the workspace (no '/', not '.' or '..', not the package "
               "store's .layoutd-store or the archives' .layoutd-export), got '%s'",
               w->cache_path);
}

/* ---- api ---- */

static void parse_api(Parser *p, const LayoutNode *n, ApiConfig *a) {
    static const char *const keys[] = {
        "socket", "group", "socket_mode", "readonly_socket", "readonly_socket_mode", "flush_probe_interval",
        "max_connections", "max_body", "request_timeout", "metrics_listen", NULL,
    };
    if (!lp_map_check(p, n, keys, NULL, "api"))
        return;
    LayoutNode *v;
    if ((v = lp_map_get(n, "socket", NULL)) && lp_get_path(p, v, "socket", &a->socket_path) &&
        strlen(a->socket_path) > SOCKET_PATH_MAX)
        lp_err(p, v, "socket: a Unix socket path can be at most %d bytes long", SOCKET_PATH_MAX);
    if ((v = lp_map_get(n, "group", NULL)))
        (void) lp_get_account(p, v, "group", &a->socket_group);
    if ((v = lp_map_get(n, "socket_mode", NULL)))
        (void) lp_get_mode(p, v, "socket_mode", &a->socket_mode);
    if ((v = lp_map_get(n, "readonly_socket", NULL)) && lp_get_path(p, v, "readonly_socket", &a->readonly_socket_path)) {
        if (strlen(a->readonly_socket_path) > SOCKET_PATH_MAX)
            lp_err(p, v, "readonly_socket: a Unix socket path can be at most %d bytes long", SOCKET_PATH_MAX);
        else if (a->socket_path && streq(a->readonly_socket_path, a->socket_path))
            lp_err(p, v, "readonly_socket: must not be the same path as socket (%s)", a->socket_path);
    }
    if ((v = lp_map_get(n, "metrics_listen", NULL)) && lp_get_string(p, v, "metrics_listen", &a->metrics_listen)) {
        struct sockaddr_storage ss;
        socklen_t len;
        if (layout_parse_listen(a->metrics_listen, &ss, &len) < 0)
            lp_err(p, v, "metrics_listen: '%s' is not PORT, IPv4:PORT or [IPv6]:PORT (numeric; PORT alone "
                   "listens on 127.0.0.1)", a->metrics_listen);
    }
    if ((v = lp_map_get(n, "readonly_socket_mode", NULL)))
        (void) lp_get_mode(p, v, "readonly_socket_mode", &a->readonly_socket_mode);
    if ((v = lp_map_get(n, "flush_probe_interval", NULL))) {
        usec_t t;
        if (lp_get_duration(p, v, "flush_probe_interval", &t)) {
            if (t != 0 && t < USEC_PER_SEC)
                lp_err(p, v, "flush_probe_interval: must be 0 (off) or at least 1s, got '%s'", v->value);
            else
                a->flush_probe_interval = t;
        }
    }
    if ((v = lp_map_get(n, "max_connections", NULL)))
        (void) lp_get_unsigned(p, v, "max_connections", 1, 65536, &a->max_connections);
    if ((v = lp_map_get(n, "max_body", NULL)) && lp_get_size(p, v, "max_body", &a->max_body) &&
        (a->max_body < KIB || a->max_body > 64 * MIB))
        lp_err(p, v, "max_body: must be between 1KiB and 64MiB, got %s", v->value);
    if ((v = lp_map_get(n, "request_timeout", NULL)))
        (void) lp_get_duration_range(p, v, "request_timeout", USEC_PER_SEC, 3600 * USEC_PER_SEC,
                                  &a->request_timeout);
}

/* ---- top level ---- */

static int layout_new_defaults(const char *name, Layout **ret) {
    _cleanup_(layout_freep) Layout *l = calloc(1, sizeof(Layout));
    if (!l)
        return -ENOMEM;
    l->version = LAYOUT_VERSION;
    for (PoolRole r = 0; r < _POOL_ROLE_MAX; r++)
        pool_defaults(&l->pools[r], r);
    WorkspaceConfig *w = &l->workspace;
    *w = (WorkspaceConfig) {
        .dir_mode = 0750,
        .restart = RESTART_ON_FAILURE,
        .backoff_initial = USEC_PER_SEC,
        .backoff_max = 60 * USEC_PER_SEC,
        .backoff_reset_after = 120 * USEC_PER_SEC,
        .crashloop_deaths = 5,
        .crashloop_interval = 300 * USEC_PER_SEC,
        .ready_timeout = 10 * USEC_PER_SEC,
        .stop_timeout = 10 * USEC_PER_SEC,
        .hang_timeout = 120 * USEC_PER_SEC,
        .mount_root_is_default = true,
        /* "auto": on where a clone from the store shares extents (XFS,
         * btrfs), where installs from it measured faster than copying;
         * off on ext4, where every clone copies the bytes and installs
         * measured slower (docs/benchmarks.md, "The package store"). */
        .package_store_auto = true,
        /* One runaway daemon must not starve the others: memory is
         * throttled at 4 GiB and killed at 8 GiB, CPU and I/O are shared
         * evenly, and a fork bomb stops at 4096 tasks. */
        .resources = { .memory_max = 8 * GIB, .memory_high = 4 * GIB, .cpu_weight = 100, .io_weight = 100,
                       .tasks_max = 4096 },
    };
    l->api = (ApiConfig) {
        .socket_mode = 0660,
        .readonly_socket_mode = 0666, /* it only reads: any local user may */
        .flush_probe_interval = 30 * USEC_PER_SEC,
        .max_connections = 4096, /* 1,000 idle clients must not lock others out; clamped to RLIMIT_NOFILE */
        .max_body = 64 * KIB,
        .request_timeout = 10 * USEC_PER_SEC,
    };
    static const char *const argv[] = {
        DEFAULT_COMMAND_0, "--state", "{state_dir}", "--content", "{content_dirs}", "{mountpoint}", NULL,
    };
    if (!(l->source = strdup(name)) || !(l->root = strdup(DEFAULT_ROOT)) || !(w->user = strdup("root")) ||
        !(l->api.socket_path = strdup(LAYOUT_API_SOCKET_DEFAULT)) || !(l->api.socket_group = strdup("layoutd")) ||
        strv_copy(argv, &w->command) < 0 || !(w->environment = calloc(1, sizeof(char *))))
        return -ENOMEM;
    *ret = TAKE_PTR(l);
    return 0;
}

/* The placeholders that name the content pool. */
static const char *content_placeholder(const char *arg) {
    static const char *const names[] = { "{content_dirs}", "{content_dir}", "{shards}", NULL };
    for (const char *const *k = names; *k; k++)
        if (strstr(arg, *k))
            return *k;
    return NULL;
}

/* What depends on both the pools and the workspace: without a content
 * pool the default command runs the daemon without one, and a command
 * that names the pool is an error here rather than a daemon that cannot
 * start later; with one, its sweep's defaults follow the command. */
static void resolve_content(Parser *p, const LayoutNode *top, Layout *l) {
    Pool *content = &l->pools[POOL_CONTENT];
    WorkspaceConfig *w = &l->workspace;
    LayoutNode *ws = lp_map_get(top, "workspace", NULL);
    LayoutNode *cmd = ws && ws->type == LAYOUT_NODE_MAPPING ? lp_map_get(ws, "command", NULL) : NULL;
    if (content->declared) {
        LayoutNode *pools = lp_map_get(top, "pools", NULL);
        LayoutNode *c = pools && pools->type == LAYOUT_NODE_MAPPING ? lp_map_get(pools, "content", NULL) : NULL;
        LayoutNode *gc = c && c->type == LAYOUT_NODE_MAPPING ? lp_map_get(c, "gc", NULL) : NULL;
        lp_resolve_gc(p, gc, content, w);
        return;
    }
    if (!w->command || (cmd && !p->command_given))
        return; /* a command that was refused is reported already */
    if (!cmd) {
        /* The built-in command: drop "--content {content_dirs}". */
        size_t o = 0;
        for (size_t i = 0; w->command[i]; i++) {
            if (streq(w->command[i], "--content") && w->command[i + 1] && content_placeholder(w->command[i + 1])) {
                free(w->command[i]);
                free(w->command[++i]);
                continue;
            }
            w->command[o++] = w->command[i];
        }
        w->command[o] = NULL;
        return;
    }
    for (size_t i = 0; w->command[i]; i++) {
        const char *ph = content_placeholder(w->command[i]);
        if (ph) {
            const LayoutNode *at = cmd->type == LAYOUT_NODE_SEQUENCE && i < cmd->n_items ? cmd->items[i] : cmd;
            lp_err(p, at, "command: '%s' names the content pool, but the layout declares none; declare "
                   "pools.content, or drop the placeholder (and its option) to run the daemon without a pool", ph);
            return;
        }
    }
}

/* What workspace.package_store: auto turns on: the state pool's clones
 * share extents (its filesystem reflinks on copy_file_range) unless its
 * mkfs options turn reflink off (XFS's -m reflink=0, or crc=0, which
 * cannot have it). A filesystem made by an older mkfs with other defaults
 * is not seen here. */
static bool state_pool_shares_extents(const Layout *l) {
    const Pool *state = layout_pool(l, POOL_STATE);
    const BackendTraits *t = state ? backend_traits(state->backend) : NULL;
    if (!t || !t->fs || !t->fs->shares_extents)
        return false;
    for (char **o = state->mkfs_options; o && *o; o++)
        if (strstr(*o, "reflink=0") || strstr(*o, "crc=0"))
            return false;
    return true;
}

static void parse_top(Parser *p, const LayoutNode *n, Layout *l) {
    static const char *const keys[] = { "version", "root", "pools", "workspace", "api", NULL };
    if (n->type != LAYOUT_NODE_MAPPING) {
        lp_err(p, n, "the layout must be a mapping with keys such as version, root, pools; got %s", lp_node_kind(n));
        return;
    }
    if (!lp_map_check(p, n, keys, NULL, "the layout"))
        return;
    LayoutNode *v, *k;
    const char *ver;
    if (!(v = lp_map_get(n, "version", NULL)))
        lp_err(p, n, "missing required key 'version' (write 'version: 1' as the first line)");
    else if ((ver = lp_get_scalar(p, v, "version", "1")) && !streq(ver, "1"))
        lp_err(p, v, "version: must be %d (this layoutd understands layout version %d), got '%s'", LAYOUT_VERSION,
            LAYOUT_VERSION, ver);
    const char *why;
    if ((v = lp_map_get(n, "root", NULL)) && lp_get_path(p, v, "root", &l->root) &&
        (why = layout_path_why_unsafe(l->root)))
        lp_err(p, v, "root: %s cannot be layoutd's root: %s (the default is /var/lib/layoutd)", l->root, why);
    if (!(v = lp_map_get(n, "pools", &k)))
        lp_err(p, n, "missing required key 'pools' (at least pools: {state: {...}})");
    else
        parse_pools(p, v, k, l);
    if ((v = lp_map_get(n, "workspace", NULL)))
        parse_workspace(p, v, l);
    if ((v = lp_map_get(n, "api", NULL)))
        parse_api(p, v, &l->api);
    resolve_content(p, n, l);
    if (l->workspace.package_store_auto)
        l->workspace.package_store = state_pool_shares_extents(l);

    if (l->workspace.mount_root_is_default) {
        free(l->workspace.mount_root);
        l->workspace.mount_root = NULL;
        if (asprintf(&l->workspace.mount_root, "%s/workspaces", streq(l->root, "/") ? "" : l->root) < 0) {
            l->workspace.mount_root = NULL;
            lp_oom(p);
        }
    }
}

int layout_parse_string(const char *data, size_t len, const char *name, Layout **ret, LayoutErrors *errors) {
    _cleanup_(layout_errors_clear) LayoutErrors local = {};
    if (!errors)
        errors = &local; /* the caller does not want them, but we need the count */
    Parser p = { .name = name ?: "<input>", .errors = errors };
    _cleanup_(layout_node_freep) LayoutNode *tree = NULL;
    _cleanup_(layout_freep) Layout *l = NULL;
    size_t n_before = errors->n;
    int r;

    if (!data && len > 0)
        return -EINVAL;
    if (len > LAYOUT_FILE_MAX) {
        r = layout_errors_add(errors, p.name, 0, 0, "the input is larger than %d KiB; that is not a layout",
                              LAYOUT_FILE_MAX / 1024);
        return r < 0 ? r : -EINVAL;
    }
    r = layout_node_parse(data ?: "", len, p.name, &tree, errors);
    if (r == -ENOMEM)
        return r;
    if (r < 0 && !tree) {
        layout_errors_sort(errors);
        return -EINVAL;
    }
    if (!tree) {
        r = layout_errors_add(errors, p.name, 0, 0,
                              "the file is empty; expected a layout (a mapping starting with 'version: 1')");
        return r < 0 ? r : -EINVAL;
    }
    r = layout_new_defaults(p.name, &l);
    if (r < 0)
        return r;
    if (lp_node_is_null(tree))
        lp_err(&p, NULL, "the file is empty; expected a layout (a mapping starting with 'version: 1')");
    else
        parse_top(&p, tree, l);
    if (p.oom < 0)
        return p.oom;
    if (errors->n > n_before) {
        layout_errors_sort(errors);
        return -EINVAL;
    }
    r = layout_marks_collect(l, tree);
    if (r < 0)
        return r;
    *ret = TAKE_PTR(l);
    return 0;
}

/* Reads at most LAYOUT_FILE_MAX + 1 bytes, so that /dev/zero or a huge
 * file is an error, not an endless allocation. Pipes work
 * (`layoutctl validate <(generate)`). */
static int read_layout_file(const char *path, char **ret, size_t *ret_len) {
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return negative_errno();
    struct stat st;
    if (fstat(fd, &st) < 0)
        return negative_errno();
    if (S_ISDIR(st.st_mode))
        return -EISDIR;
    _cleanup_free_ char *buf = malloc(LAYOUT_FILE_MAX + 2);
    if (!buf)
        return -ENOMEM;
    size_t len = 0;
    while (len <= LAYOUT_FILE_MAX) {
        ssize_t k = read(fd, buf + len, LAYOUT_FILE_MAX + 1 - len);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return negative_errno();
        }
        if (k == 0)
            break;
        len += (size_t) k;
    }
    if (len > LAYOUT_FILE_MAX)
        return -EFBIG;
    buf[len] = 0;
    *ret = TAKE_PTR(buf);
    *ret_len = len;
    return 0;
}

int layout_parse_file(const char *path, Layout **ret, LayoutErrors *errors) {
    _cleanup_free_ char *data = NULL;
    size_t len = 0;
    int r;

    if (!path)
        return -EINVAL;
    r = read_layout_file(path, &data, &len);
    if (r < 0) {
        int k;
        if (r == -EFBIG)
            k = layout_errors_add(errors, path, 0, 0, "the file is larger than %d KiB; that is not a layout",
                                  LAYOUT_FILE_MAX / 1024);
        else
            k = layout_errors_add(errors, path, 0, 0, "cannot read the layout: %s", strerror(-r));
        return k < 0 ? k : r;
    }
    return layout_parse_string(data, len, path, ret, errors);
}
