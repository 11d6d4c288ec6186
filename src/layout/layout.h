/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The layout: what an operator declares in YAML (docs/layout.md), parsed and
 * validated into plain structs. This layer is pure: it reads the file it is
 * given and nothing else, and knows nothing of devices, mounts or daemons.
 *
 * Every other layer takes a `const Layout *` and reads it; nothing outside
 * src/layout/ builds or mutates one. All values are normalised: defaults are
 * filled in, sizes are bytes, durations are microseconds, paths are absolute.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "fs-type.h"
#include "macro.h"

#define LAYOUT_VERSION 1
#define LAYOUT_NAME_MAX 32         /* pool, volume, tenant names */
#define LAYOUT_WORKSPACE_ID_MAX 64 /* workspace ids: [a-z0-9][a-z0-9-]* */
/* api.socket when the layout does not say: the one place this path is
 * spelled (the API, layoutctl and the unit all use it). */
#define LAYOUT_API_SOCKET_DEFAULT "/run/layoutd/api.sock"

typedef enum Backend {
    BACKEND_LOOP_EXT4,
    BACKEND_LOOP_XFS,
    BACKEND_LOOP_BTRFS,
    BACKEND_VDO_XFS,
    BACKEND_DIR,
    _BACKEND_MAX,
    _BACKEND_INVALID = -EINVAL,
} Backend;

typedef enum PoolRole {
    POOL_STATE,   /* per-instance state: one directory per workspace */
    POOL_CONTENT, /* the shared content-addressed pool, split in shards */
    _POOL_ROLE_MAX,
    _POOL_ROLE_INVALID = -EINVAL,
} PoolRole;

typedef enum PlacementPolicy {
    PLACEMENT_SPREAD, /* fewest workspaces first, then most free space */
    PLACEMENT_PACK,   /* fullest volume that still fits */
    _PLACEMENT_POLICY_MAX,
    _PLACEMENT_POLICY_INVALID = -EINVAL,
} PlacementPolicy;

typedef enum RestartPolicy {
    RESTART_ALWAYS,
    RESTART_ON_FAILURE,
    RESTART_NEVER,
    _RESTART_POLICY_MAX,
    _RESTART_POLICY_INVALID = -EINVAL,
} RestartPolicy;

/* name <-> enum; *_from_string returns the _INVALID value for unknown names.
 * *_names: every name in enum order (n of them, NULL where a value has
 * none), for a message that lists them. */
const char *backend_to_string(Backend b);
Backend backend_from_string(const char *s);
const char *pool_role_to_string(PoolRole r);
PoolRole pool_role_from_string(const char *s);
const char *placement_policy_to_string(PlacementPolicy p);
PlacementPolicy placement_policy_from_string(const char *s);
const char *restart_policy_to_string(RestartPolicy p);
RestartPolicy restart_policy_from_string(const char *s);
const char *const *backend_names(size_t *ret_n);
/* Why path may not be layoutd's root or mount_root (a system tree such as
 * /etc or /usr, or a directory others use, such as / or /var/lib), or
 * NULL when it may. Lexical: the caller resolves symlinks first when it
 * may look at the host (engine_check_host). */
const char *layout_path_why_unsafe(const char *path);
/* True for a name of the form a volume's name takes ("state-3",
 * "content-0"): no workspace may take one, or `layoutctl show NAME` and
 * every report keyed by name could not tell the two apart. */
bool layout_name_is_volume(const char *s);
const char *const *placement_policy_names(size_t *ret_n);
const char *const *restart_policy_names(size_t *ret_n);

/*
 * What the layout language knows about each backend: data, no behaviour
 * (the behaviour is src/backend's VolumeBackend table). The validator and
 * every layer that must tell backends apart read these traits instead of
 * comparing Backend values.
 */
typedef struct BackendTraits {
    const FsType *fs;                /* the volume's filesystem (fs-type.h);
                                        NULL for dir (no filesystem of its
                                        own) */
    bool has_device;                 /* a backing file (or block device) with a
                                        size, a filesystem and a mount; false
                                        for dir */
    bool uses_loop;                  /* a loop device: direct_io applies */
    bool takes_writeback;            /* bdi writeback limits of its loop device */
    bool takes_vdo;                  /* the pool's vdo: options */
    bool takes_growth;               /* the pool's growth: key (automatic
                                        online growth of its volumes) */
} BackendTraits;

/* The traits of b, or NULL for a value that is not a backend. */
const BackendTraits *backend_traits(Backend b);

/* bdi writeback limits of a volume's loop device (/sys/class/bdi/M:m/). */
typedef struct WritebackLimits {
    int max_ratio;      /* 0..100 percent; -1 = leave the kernel's value */
    uint64_t max_bytes; /* 0 = leave the kernel's value */
    int strict_limit;   /* 0/1; -1 = leave the kernel's value */
} WritebackLimits;

/* Only for BACKEND_VDO_XFS (has_vdo is false otherwise). */
typedef struct VdoOptions {
    uint64_t logical_size;           /* bytes; >= the pool's volume_size */
    bool compression;                /* default true */
    bool deduplication;              /* default true */
    usec_t fstrim_interval;          /* 0 = no periodic fstrim; default 1 day */
    uint64_t block_map_cache;        /* bytes; default 128 MiB, >= 128 MiB */
    char *device;                    /* a block device to use instead of a
                                        backing file, or NULL */
} VdoOptions;

/* When a volume is full enough to say so: percent used of its bytes or of
 * its inodes, whichever is fuller (docs/operations.md, "Capacity"). */
typedef struct CapacityThresholds {
    unsigned warn;                   /* health warning; default 80 */
    unsigned critical;               /* health degraded; default 95, > warn */
} CapacityThresholds;

/* Automatic online growth of a pool's volumes (loop backends only). */
typedef struct GrowthPolicy {
    bool enabled;                    /* the pool has a growth: key */
    unsigned threshold;              /* percent used (bytes or inodes) that
                                        starts a grow; default 80 */
    uint64_t step;                   /* bytes added per grow; 0 = double */
    uint64_t max_size;               /* no volume grows past it; default
                                        16 x volume_size */
    uint64_t host_reserve;           /* bytes the host filesystem keeps
                                        free after a grow (or a carve) ... */
    unsigned host_reserve_percent;   /* ... or this percent of its size, when
                                        host_reserve is 0; default 5 */
} GrowthPolicy;

/* The content pool's sweep: the daemons' own tool, run as a child. The
 * agent appends the sweep's arguments to `command` (docs/layout.md, "gc"). */
typedef struct GcPolicy {
    bool enabled;
    char **command;                  /* argv prefix, command[0] absolute */
    usec_t interval;                 /* between sweeps; default 1h */
    usec_t grace;                    /* objects younger than this are never
                                        swept; default 1h */
    unsigned free_threshold;         /* percent free under which a sweep runs
                                        at once (at most once a minute);
                                        default 20; 0 = never early */
} GcPolicy;

typedef struct Pool {
    PoolRole role;
    bool declared;                   /* false: the layout has no such pool */
    Backend backend;
    uint64_t volume_size;            /* bytes, multiple of 4096 */
    unsigned min_volumes;            /* carved at apply time */
    unsigned max_volumes;            /* upper bound for on-demand carving */
    unsigned workspaces_per_volume;  /* the flush-scope bound (state pool) */
    bool direct_io;                  /* default true; loop backends only */
    bool preallocate;                /* default false; loop-ext4/xfs/btrfs:
                                        the backing file is fully allocated
                                        (fallocate) at carve and at growth,
                                        so writes inside never allocate on
                                        the host filesystem */
    WritebackLimits writeback;
    char **mkfs_options;             /* extra argv for mkfs (strv, may be empty) */
    char *mount_options;             /* comma-separated, may be NULL */
    PlacementPolicy placement;       /* default spread */
    bool tenant_isolation;           /* a volume holds one tenant only */
    uint64_t workspace_reserve;      /* bytes a workspace needs when it has
                                        no quota; default 64 MiB */
    uint64_t workspace_reserve_inodes; /* default 4096 */
    unsigned quota_overcommit;       /* percent: the quotas of a volume's
                                        workspaces may add up to this share
                                        of its size; default 100 */
    unsigned slow_flush_factor;      /* state only: placement passes over a
                                        volume whose recent flush probe is
                                        more than this many times the pool's
                                        fastest ... ; default 0 (off) */
    usec_t slow_flush_floor;         /* ... and at least this; default 20ms */
    unsigned shards;                 /* content pool only: number of shards
                                        (= volumes); 1 for the state pool */
    bool has_vdo;
    VdoOptions vdo;
    CapacityThresholds capacity;
    GrowthPolicy growth;
    GcPolicy gc;                     /* content pool only */
} Pool;

typedef struct StaticWorkspace {
    char *id;
    char *tenant;                    /* NULL = no tenant */
    uint64_t quota;                  /* bytes, 0 = none */
} StaticWorkspace;

/* cgroup v2 limits of each workspace's daemon (its own cgroup; see
 * docs/supervision.md). UINT64_MAX: no limit ("infinity"). */
typedef struct WorkspaceResources {
    uint64_t memory_max;             /* memory.max; default 8 GiB */
    uint64_t memory_high;            /* memory.high (throttle); default 4 GiB */
    unsigned cpu_weight;             /* cpu.weight 1..10000; default 100 */
    unsigned io_weight;              /* io.weight 1..10000; default 100 */
    uint64_t tasks_max;              /* pids.max; default 4096 */
} WorkspaceResources;

/* Where a workspace's cache is mounted inside it, unless the layout says. */
#define LAYOUT_CACHE_PATH ".layoutd-cache"

typedef struct WorkspaceConfig {
    char *mount_root;                /* default <root>/workspaces */
    char **command;                  /* argv template; command[0] absolute.
                                        Placeholders: {id} {tenant}
                                        {state_dir} {content_dirs}
                                        {content_dir} {shards} {mountpoint}
                                        {volume} */
    char *user;                      /* default "root" */
    char *group;                     /* default: the user's primary group */
    char **environment;              /* "KEY=VALUE" strv, may be empty */
    mode_t dir_mode;                 /* workspace state dir mode, default 0750 */
    RestartPolicy restart;           /* default on-failure */
    usec_t backoff_initial;          /* default 1 s; >= 100 ms */
    usec_t backoff_max;              /* default 60 s; >= backoff_initial */
    usec_t backoff_reset_after;      /* stable this long -> backoff resets;
                                        default 120 s */
    unsigned crashloop_deaths;       /* N deaths ... default 5 */
    usec_t crashloop_interval;       /* ... in T -> failed; default 300 s */
    usec_t ready_timeout;            /* default 10 s */
    usec_t stop_timeout;             /* default 10 s */
    usec_t hang_timeout;             /* FUSE requests stuck this long =
                                        hung; 0 = no watch; default 120 s */
    bool restart_on_hang;            /* default false: report only */
    bool stop_with_agent;            /* on_agent_stop: stop (default keep:
                                        the daemons outlive the agent, which
                                        re-adopts them when it starts) */
    int oom_score_adjust;            /* of each daemon, -1000..1000; default 0 */
    bool package_store;              /* true: each daemon is handed its
                                        tenant's package store on its state
                                        volume (LAYOUTD_STORE_DIR). Resolved
                                        at parse time: "auto" (the default)
                                        is true where the state pool's
                                        filesystem shares extents on copy
                                        (FsType.shares_extents) */
    bool package_store_auto;         /* package_store came from "auto" */
    bool cache;                      /* a native cache mount in each workspace
                                        (docs/layout.md, "The cache");
                                        default false */
    char *cache_path;                /* its name inside the mount, one
                                        component; NULL: LAYOUT_CACHE_PATH */
    WorkspaceResources resources;
    StaticWorkspace *static_workspaces;
    size_t n_static_workspaces;
    bool mount_root_is_default;      /* mount_root was not given: it follows
                                        layout_set_root() */
} WorkspaceConfig;

typedef struct ApiConfig {
    char *socket_path;               /* default /run/layoutd/api.sock */
    char *socket_group;              /* default "layoutd"; may not exist */
    mode_t socket_mode;              /* default 0660 */
    char *readonly_socket_path;      /* a second socket that only serves
                                        reads (GET/HEAD); NULL: none */
    mode_t readonly_socket_mode;     /* default 0666 */
    usec_t flush_probe_interval;     /* 0 = off; default 30 s */
    unsigned max_connections;        /* default 256 */
    uint64_t max_body;               /* bytes, default 64 KiB */
    usec_t request_timeout;          /* default 10 s */
    char *metrics_listen;            /* "ADDR:PORT" (or "PORT": loopback) of an
                                        opt-in TCP listener serving GET /metrics
                                        only; NULL: none (the default) */
} ApiConfig;

/* Where a value stands in the layout's file (layout_key_position). */
typedef struct LayoutMark {
    char *key;                       /* "workspace.user", "pools.state.gc.command[0]" */
    unsigned line, column;           /* 1-based, of the value */
} LayoutMark;

typedef struct Layout {
    char *source;                    /* file the layout came from */
    unsigned version;                /* LAYOUT_VERSION */
    char *root;                      /* absolute; backing files, mounts and
                                        the agent's record live below it */
    Pool pools[_POOL_ROLE_MAX];      /* indexed by PoolRole */
    WorkspaceConfig workspace;
    ApiConfig api;
    LayoutMark *marks;               /* every value the file gives; not part
                                        of the layout's meaning (hash, JSON) */
    size_t n_marks;
} Layout;

/* One diagnostic: file:line:column: message. line/column are 1-based;
 * 0 when the error is about the file as a whole. */
typedef struct LayoutError {
    char *file;
    unsigned line;
    unsigned column;
    char *message;
} LayoutError;

typedef struct LayoutErrors {
    LayoutError *items;
    size_t n;
} LayoutErrors;

void layout_errors_clear(LayoutErrors *e);
/* Appends an error (line 0: about the file as a whole). Returns 0 or -ENOMEM. */
int layout_errors_add(LayoutErrors *e, const char *file, unsigned line, unsigned column, const char *fmt, ...)
        _printf_(5, 6);

/*
 * Parses and validates a layout from memory. `name` is used in
 * diagnostics. Every problem found is appended to `errors` (the caller
 * initialises it to {} and clears it); parsing goes on after an error so
 * that all of them are reported.
 * Returns: -EINVAL if the layout is invalid (errors->n > 0), -ENOMEM,
 * 0 on success with *ret set (and errors->n == 0).
 */
int layout_parse_string(const char *data, size_t len, const char *name,
                        Layout **ret, LayoutErrors *errors);

/* As layout_parse_string, reading `path`. An unreadable file is one error
 * in `errors` and -errno. */
int layout_parse_file(const char *path, Layout **ret, LayoutErrors *errors);

/*
 * Finds the layout of a directory such as /etc/layoutd/layouts.d: exactly
 * one *.yaml file is allowed (see docs/layout.md for why). Sets *ret_path.
 * Returns: -ENOENT (none), -ENOTUNIQ (more than one, errors says which),
 * -errno, 0.
 */
int layout_find_in_dir(const char *dir, char **ret_path, LayoutErrors *errors);

/* Frees a layout and everything it owns. Accepts NULL; returns NULL. */
Layout *layout_free(Layout *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(Layout *, layout_free)

/* Overrides the root (and paths that default below it: the workspace mount
 * root, if it was defaulted); the file's position of root is forgotten. Returns 0 or -ENOMEM/-EINVAL (not absolute). */
int layout_set_root(Layout *l, const char *root);

/*
 * Where the file gives the value of key: a dotted path as the messages
 * name it ("root", "workspace.user", "pools.state.volume_size",
 * "workspace.command[0]"). For an error about a value found after the
 * parse (engine_check_host), so that it names file:line:column as the
 * parser's do. Returns false (line and column left alone) when the file
 * does not give it: a default, or a value set since (layout_set_root).
 */
bool layout_key_position(const Layout *l, const char *key, unsigned *ret_line, unsigned *ret_column);

/* The pool for a role, or NULL when the layout does not declare it. */
const Pool *layout_pool(const Layout *l, PoolRole role);

/* Hash (hex SHA-256) of the normalised layout, for /v1/status and reload
 * diffing. Returns 0 or -ENOMEM. */
int layout_hash(const Layout *l, char **ret);

/* The normalised layout as a json-c object (sizes in bytes, durations in
 * microseconds), for embedding in API replies. The caller owns *ret
 * (json_object_put). Returns 0, -EINVAL or -ENOMEM. */
struct json_object;
int layout_to_json(const Layout *l, struct json_object **ret);

/* The normalised layout as JSON text (defaults filled in), as printed by
 * `layoutctl validate --show --json`. Returns 0 or -ENOMEM. */
int layout_to_json_string(const Layout *l, char **ret);
/* The same as YAML text, for `layoutctl validate --show`. */
int layout_to_yaml_string(const Layout *l, char **ret);

/* Parses "12G", "512MiB", "4096" into bytes. Returns -EINVAL/-ERANGE or 0. */
/* api.metrics_listen's value: "PORT" (127.0.0.1), "IPv4:PORT" or
 * "[IPv6]:PORT", numeric only. Returns: -EINVAL, 0 with *ret, *ret_len. */
int layout_parse_listen(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len);
int layout_parse_size(const char *s, uint64_t *ret);
/* Parses "500ms", "30s", "5min", "1h", "1d" into usec. */
int layout_parse_duration(const char *s, usec_t *ret);
/* Formats bytes / usec in the largest unit that is exact ("256MiB", "30s",
 * "5min"), as the YAML output writes them; the result parses back to the
 * same value. Return 0 or -ENOMEM. */
int layout_format_size(uint64_t bytes, char **ret);
int layout_format_duration(usec_t usec, char **ret);
/* True if s is a valid name: [a-z0-9][a-z0-9-]*, at most `max` chars. */
bool layout_name_is_valid(const char *s, size_t max);

/* The placeholders a workspace command may use, NULL-terminated, without
 * braces ("id", "tenant", ...). */
extern const char *const layout_placeholders[];

/* Volume naming, shared by every layer: "<role>-<index>", e.g. "state-3". */
int layout_volume_name(PoolRole role, unsigned index, char **ret);
/* Paths below the root: <root>/images/<volume>.img, <root>/volumes/<volume>,
 * <root>/layoutd-state.json. Return 0 or -ENOMEM. */
int layout_backing_path(const Layout *l, const char *volume, char **ret);
int layout_mount_path(const Layout *l, const char *volume, char **ret);
int layout_record_path(const Layout *l, char **ret);
