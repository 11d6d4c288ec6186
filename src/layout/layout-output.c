/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The normalised layout as JSON (sizes in bytes, durations in
 * microseconds) and as YAML (the same tree, with sizes and durations
 * written in units so that it reads like a layout and parses back to the
 * same Layout), and the layout hash.
 *
 * Both outputs come from one json-c tree so that they can never disagree
 * about which keys exist. Keys a layout cannot have in a given place
 * (shards on the state pool, volume_size on a dir pool, unset writeback
 * limits, ...) are left out rather than written as null, so that the YAML
 * output is itself a valid layout.
 */
#include <inttypes.h>
#include <json-c/json.h>
#include <openssl/evp.h>
#include <stdio.h>

#include "layout.h"
#include "util.h"

typedef struct Out {
    bool human; /* units in strings (YAML) rather than plain numbers (JSON) */
    int r;
} Out;

static void add(Out *o, json_object *obj, const char *key, json_object *v) {
    if (!v) {
        o->r = -ENOMEM;
        return;
    }
    if (json_object_object_add(obj, key, v) < 0) {
        json_object_put(v);
        o->r = -ENOMEM;
    }
}

static void add_str(Out *o, json_object *obj, const char *key, const char *s) {
    if (s)
        add(o, obj, key, json_object_new_string(s));
}

static void add_u64(Out *o, json_object *obj, const char *key, uint64_t v) {
    add(o, obj, key, json_object_new_int64((int64_t) MIN(v, (uint64_t) INT64_MAX)));
}

static void add_bool(Out *o, json_object *obj, const char *key, bool v) {
    add(o, obj, key, json_object_new_boolean(v));
}

static void add_size(Out *o, json_object *obj, const char *key, uint64_t v) {
    if (!o->human) {
        add_u64(o, obj, key, v);
        return;
    }
    _cleanup_free_ char *s = NULL;
    if (layout_format_size(v, &s) < 0) {
        o->r = -ENOMEM;
        return;
    }
    add_str(o, obj, key, s);
}

static void add_duration(Out *o, json_object *obj, const char *key, usec_t v) {
    if (!o->human) {
        add_u64(o, obj, key, v);
        return;
    }
    _cleanup_free_ char *s = NULL;
    if (layout_format_duration(v, &s) < 0) {
        o->r = -ENOMEM;
        return;
    }
    add_str(o, obj, key, s);
}

static void add_mode(Out *o, json_object *obj, const char *key, mode_t m) {
    char buf[16];
    snprintf(buf, sizeof buf, "%04o", (unsigned) m);
    add_str(o, obj, key, buf);
}

static void add_strv(Out *o, json_object *obj, const char *key, char *const *l) {
    json_object *a = json_object_new_array();
    if (!a) {
        o->r = -ENOMEM;
        return;
    }
    for (char *const *i = l; i && *i; i++) {
        json_object *s = json_object_new_string(*i);
        if (!s || json_object_array_add(a, s) < 0) {
            json_object_put(s);
            o->r = -ENOMEM;
        }
    }
    add(o, obj, key, a);
}

/* "80%" in YAML (the percent sign is the syntax), 80 in JSON. */
static void add_percent(Out *o, json_object *obj, const char *key, unsigned v) {
    if (!o->human) {
        add_u64(o, obj, key, v);
        return;
    }
    char buf[16];
    snprintf(buf, sizeof buf, "%u%%", v);
    add_str(o, obj, key, buf);
}

static json_object *new_object(Out *o) {
    json_object *j = json_object_new_object();
    if (!j)
        o->r = -ENOMEM;
    return j;
}

static void capacity_to_json(Out *o, json_object *j, const Pool *p) {
    json_object *c = new_object(o);
    if (c) {
        add_percent(o, c, "warn", p->capacity.warn);
        add_percent(o, c, "critical", p->capacity.critical);
        add(o, j, "capacity", c);
    }
    const GrowthPolicy *g = &p->growth;
    if (!g->enabled)
        add_bool(o, j, "growth", false);
    else if ((c = new_object(o))) {
        add_percent(o, c, "threshold", g->threshold);
        if (g->step)
            add_size(o, c, "step", g->step);
        else
            add_str(o, c, "step", "double");
        add_size(o, c, "max_size", g->max_size);
        if (!o->human) {
            add_size(o, c, "host_reserve", g->host_reserve);
            add_u64(o, c, "host_reserve_percent", g->host_reserve_percent);
        } else if (g->host_reserve_percent)
            add_percent(o, c, "host_reserve", g->host_reserve_percent);
        else
            add_size(o, c, "host_reserve", g->host_reserve);
        add(o, j, "growth", c);
    }
    if (p->role != POOL_CONTENT)
        return;
    if (!p->gc.enabled)
        add_bool(o, j, "gc", false);
    else if ((c = new_object(o))) {
        add_strv(o, c, "command", p->gc.command);
        add_duration(o, c, "interval", p->gc.interval);
        add_duration(o, c, "grace", p->gc.grace);
        add_percent(o, c, "free_threshold", p->gc.free_threshold);
        add(o, j, "gc", c);
    }
}

static json_object *pool_to_json(Out *o, const Pool *p) {
    json_object *j = json_object_new_object();
    if (!j) {
        o->r = -ENOMEM;
        return NULL;
    }
    const BackendTraits *t = backend_traits(p->backend);
    bool dir = !t || !t->has_device;
    add_str(o, j, "backend", backend_to_string(p->backend));
    if (!dir)
        add_size(o, j, "volume_size", p->volume_size);
    if (p->role == POOL_STATE) {
        add_u64(o, j, "min_volumes", p->min_volumes);
        add_u64(o, j, "max_volumes", p->max_volumes);
        add_u64(o, j, "workspaces_per_volume", p->workspaces_per_volume);
    } else
        add_u64(o, j, "shards", p->shards);
    add_bool(o, j, "direct_io", p->direct_io);
    if (!dir)
        add_bool(o, j, "preallocate", p->preallocate);
    if (!dir) {
        json_object *wb = json_object_new_object();
        if (!wb)
            o->r = -ENOMEM;
        else {
            if (p->writeback.max_ratio >= 0)
                add_u64(o, wb, "max_ratio", (uint64_t) p->writeback.max_ratio);
            if (p->writeback.max_bytes > 0)
                add_size(o, wb, "max_bytes", p->writeback.max_bytes);
            if (p->writeback.strict_limit >= 0)
                add_bool(o, wb, "strict_limit", p->writeback.strict_limit > 0);
            add(o, j, "writeback", wb);
        }
        add_strv(o, j, "mkfs_options", p->mkfs_options);
        add_str(o, j, "mount_options", p->mount_options);
    }
    if (p->role == POOL_STATE) {
        add_str(o, j, "placement", placement_policy_to_string(p->placement));
        add_bool(o, j, "tenant_isolation", p->tenant_isolation);
        add_percent(o, j, "quota_overcommit", p->quota_overcommit);
        add_u64(o, j, "slow_flush_factor", p->slow_flush_factor);
        add_duration(o, j, "slow_flush_floor", p->slow_flush_floor);
        add_size(o, j, "workspace_reserve", p->workspace_reserve);
        /* Not for a filesystem without an inode count (btrfs), where the
         * key is refused: the output must parse back. */
        if (!t || !t->fs || t->fs->counts_inodes)
            add_u64(o, j, "workspace_reserve_inodes", p->workspace_reserve_inodes);
    }
    capacity_to_json(o, j, p);
    if (p->has_vdo) {
        json_object *v = json_object_new_object();
        if (!v)
            o->r = -ENOMEM;
        else {
            add_size(o, v, "logical_size", p->vdo.logical_size);
            add_bool(o, v, "compression", p->vdo.compression);
            add_bool(o, v, "deduplication", p->vdo.deduplication);
            add_duration(o, v, "fstrim_interval", p->vdo.fstrim_interval);
            add_size(o, v, "block_map_cache", p->vdo.block_map_cache);
            add_str(o, v, "device", p->vdo.device);
            add(o, j, "vdo", v);
        }
    }
    return j;
}

static json_object *workspace_to_json(Out *o, const WorkspaceConfig *w) {
    json_object *j = json_object_new_object();
    if (!j) {
        o->r = -ENOMEM;
        return NULL;
    }
    add_str(o, j, "mount_root", w->mount_root);
    add_strv(o, j, "command", w->command);
    add_str(o, j, "user", w->user);
    add_str(o, j, "group", w->group);
    json_object *env = json_object_new_object();
    if (!env)
        o->r = -ENOMEM;
    else {
        for (char **e = w->environment; e && *e; e++) {
            const char *eq = strchr(*e, '=');
            _cleanup_free_ char *k = eq ? strndup(*e, (size_t) (eq - *e)) : NULL;
            if (!k)
                o->r = -ENOMEM;
            else
                add_str(o, env, k, eq + 1);
        }
        add(o, j, "environment", env);
    }
    add_mode(o, j, "dir_mode", w->dir_mode);
    add_str(o, j, "restart", restart_policy_to_string(w->restart));
    json_object *b = json_object_new_object();
    if (b) {
        add_duration(o, b, "initial", w->backoff_initial);
        add_duration(o, b, "max", w->backoff_max);
        add_duration(o, b, "reset_after", w->backoff_reset_after);
    }
    add(o, j, "backoff", b);
    json_object *c = json_object_new_object();
    if (c) {
        add_u64(o, c, "deaths", w->crashloop_deaths);
        add_duration(o, c, "interval", w->crashloop_interval);
    }
    add(o, j, "crash_loop", c);
    add_duration(o, j, "ready_timeout", w->ready_timeout);
    add_duration(o, j, "stop_timeout", w->stop_timeout);
    add_duration(o, j, "hang_timeout", w->hang_timeout);
    add_bool(o, j, "restart_on_hang", w->restart_on_hang);
    add_str(o, j, "on_agent_stop", w->stop_with_agent ? "stop" : "keep");
    add(o, j, "oom_score_adjust", json_object_new_int(w->oom_score_adjust));
    add_bool(o, j, "package_store", w->package_store);
    add_bool(o, j, "cache", w->cache);
    add_str(o, j, "cache_path", w->cache_path ?: LAYOUT_CACHE_PATH);
    json_object *res = new_object(o);
    if (res) {
        const WorkspaceResources *r = &w->resources;
        if (r->memory_max == UINT64_MAX)
            add_str(o, res, "memory_max", "infinity");
        else
            add_size(o, res, "memory_max", r->memory_max);
        if (r->memory_high == UINT64_MAX)
            add_str(o, res, "memory_high", "infinity");
        else
            add_size(o, res, "memory_high", r->memory_high);
        add_u64(o, res, "cpu_weight", r->cpu_weight);
        add_u64(o, res, "io_weight", r->io_weight);
        if (r->tasks_max == UINT64_MAX)
            add_str(o, res, "tasks_max", "infinity");
        else
            add_u64(o, res, "tasks_max", r->tasks_max);
        add(o, j, "resources", res);
    }
    json_object *a = json_object_new_array();
    if (a)
        for (size_t i = 0; i < w->n_static_workspaces; i++) {
            json_object *s = json_object_new_object();
            if (!s || json_object_array_add(a, s) < 0) {
                json_object_put(s);
                o->r = -ENOMEM;
                continue;
            }
            add_str(o, s, "id", w->static_workspaces[i].id);
            add_str(o, s, "tenant", w->static_workspaces[i].tenant);
        }
    add(o, j, "workspaces", a);
    return j;
}

static json_object *api_to_json(Out *o, const ApiConfig *a) {
    json_object *j = json_object_new_object();
    if (!j) {
        o->r = -ENOMEM;
        return NULL;
    }
    add_str(o, j, "socket", a->socket_path);
    add_str(o, j, "group", a->socket_group);
    add_mode(o, j, "socket_mode", a->socket_mode);
    add_str(o, j, "readonly_socket", a->readonly_socket_path);
    add_str(o, j, "metrics_listen", a->metrics_listen);
    add_mode(o, j, "readonly_socket_mode", a->readonly_socket_mode);
    add_duration(o, j, "flush_probe_interval", a->flush_probe_interval);
    add_u64(o, j, "max_connections", a->max_connections);
    add_size(o, j, "max_body", a->max_body);
    add_duration(o, j, "request_timeout", a->request_timeout);
    return j;
}

static int layout_to_json_tree(const Layout *l, bool human, json_object **ret) {
    Out o = { .human = human };
    json_object *j = json_object_new_object();
    if (!j)
        return -ENOMEM;
    add_u64(&o, j, "version", l->version);
    add_str(&o, j, "root", l->root);
    json_object *pools = json_object_new_object();
    if (pools)
        for (PoolRole r = 0; r < _POOL_ROLE_MAX; r++)
            if (l->pools[r].declared)
                add(&o, pools, pool_role_to_string(r), pool_to_json(&o, &l->pools[r]));
    add(&o, j, "pools", pools);
    add(&o, j, "workspace", workspace_to_json(&o, &l->workspace));
    add(&o, j, "api", api_to_json(&o, &l->api));
    if (o.r < 0) {
        json_object_put(j);
        return o.r;
    }
    *ret = j;
    return 0;
}

int layout_to_json(const Layout *l, struct json_object **ret) {
    if (!l || !ret)
        return -EINVAL;
    return layout_to_json_tree(l, false, ret);
}

int layout_to_json_string(const Layout *l, char **ret) {
    json_object *j = NULL;
    int r = layout_to_json(l, &j);
    if (r < 0)
        return r;
    char *s = strdup(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(j);
    if (!s)
        return -ENOMEM;
    *ret = s;
    return 0;
}

/* ---- YAML ---- */

/* A YAML double-quoted scalar: JSON's string escapes are a subset of
 * YAML's, so json-c writes it for us. */
static int yaml_scalar(FILE *f, json_object *v) {
    switch (json_object_get_type(v)) {
    case json_type_string:
        fputs(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE), f);
        return 0;
    case json_type_boolean:
        fputs(json_object_get_boolean(v) ? "true" : "false", f);
        return 0;
    case json_type_int:
        fprintf(f, "%" PRId64, json_object_get_int64(v));
        return 0;
    case json_type_null:
        fputs("null", f);
        return 0;
    default:
        return -EINVAL;
    }
}

static int yaml_flow(FILE *f, json_object *v) {
    if (json_object_is_type(v, json_type_array)) {
        fputc('[', f);
        for (size_t i = 0; i < json_object_array_length(v); i++) {
            if (i > 0)
                fputs(", ", f);
            if (yaml_flow(f, json_object_array_get_idx(v, i)) < 0)
                return -EINVAL;
        }
        fputc(']', f);
        return 0;
    }
    if (json_object_is_type(v, json_type_object)) {
        bool first = true;
        fputc('{', f);
        json_object_object_foreach(v, k, x) {
            fprintf(f, "%s%s: ", first ? "" : ", ", k);
            first = false;
            if (yaml_flow(f, x) < 0)
                return -EINVAL;
        }
        fputc('}', f);
        return 0;
    }
    return yaml_scalar(f, v);
}

static bool key_is_plain(const char *k) {
    if (isempty(k))
        return false;
    for (const char *c = k; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
              *c == '-'))
            return false;
    return true;
}

static int yaml_block(FILE *f, json_object *obj, int indent) {
    json_object_object_foreach(obj, k, v) {
        fprintf(f, "%*s", indent, "");
        if (key_is_plain(k))
            fputs(k, f);
        else {
            json_object *ks = json_object_new_string(k);
            if (!ks)
                return -ENOMEM;
            yaml_scalar(f, ks);
            json_object_put(ks);
        }
        fputc(':', f);
        if (json_object_is_type(v, json_type_object) && json_object_object_length(v) > 0) {
            fputc('\n', f);
            if (yaml_block(f, v, indent + 2) < 0)
                return -EINVAL;
        } else {
            fputc(' ', f);
            if (yaml_flow(f, v) < 0)
                return -EINVAL;
            fputc('\n', f);
        }
    }
    return 0;
}

int layout_to_yaml_string(const Layout *l, char **ret) {
    json_object *j = NULL;
    int r = layout_to_json_tree(l, true, &j);
    if (r < 0)
        return r;
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (!f) {
        json_object_put(j);
        return -ENOMEM;
    }
    fputs("# normalised layout (defaults filled in)\n", f);
    r = yaml_block(f, j, 0);
    json_object_put(j);
    if (fclose(f) != 0 && r >= 0)
        r = -ENOMEM;
    if (r < 0) {
        free(buf);
        return r;
    }
    *ret = buf;
    return 0;
}

int layout_hash(const Layout *l, char **ret) {
    _cleanup_free_ char *s = NULL;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    int r = layout_to_json_string(l, &s);
    if (r < 0)
        return r;
    if (EVP_Digest(s, strlen(s), md, &n, EVP_sha256(), NULL) != 1)
        return -ENOMEM;
    char *hex = malloc(2 * n + 1);
    if (!hex)
        return -ENOMEM;
    for (unsigned i = 0; i < n; i++)
        sprintf(hex + 2 * i, "%02x", md[i]);
    *ret = hex;
    return 0;
}
