/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The agent's persisted record (see state.h). JSON via json-c:
 *
 *   { "version": 1, "generation": N,
 *     "volumes": [ { "name": ..., "role": "state", "index": 0, ... } ],
 *     "workspaces": [ { "id": ..., "daemon": { "pid": ..., ... } } ] }
 *
 * Loading is strict: a wrong type, a missing required field, an unknown
 * enum value, a duplicate name or a newer version is an error, because the
 * caller would otherwise save a "repaired" record over a file it did not
 * understand. Unknown extra keys are ignored (a same-version writer may add
 * informational fields).
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "state.h"
#include "util.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(VolumeRecord *, volume_record_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(WorkspaceRecord *, workspace_record_free)

static inline void json_object_putp(json_object **j) {
    if (*j)
        json_object_put(*j);
}
#define _cleanup_json_ _cleanup_(json_object_putp)

static int strdup_ptr(const char *s, char **ret) {
    if (!s) {
        *ret = NULL;
        return 0;
    }
    char *c = strdup(s);
    if (!c)
        return -ENOMEM;
    *ret = c;
    return 0;
}

/* ---- life cycle -------------------------------------------------------- */

int state_record_new(StateRecord **ret) {
    if (!ret)
        return -EINVAL;
    StateRecord *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->version = STATE_RECORD_VERSION;
    *ret = s;
    return 0;
}

VolumeRecord *volume_record_free(VolumeRecord *v) {
    if (!v)
        return NULL;
    free(v->name);
    free(v->backing_path);
    free(v->fs_type);
    free(v->fs_uuid);
    free(v->fs_label);
    free(v->dm_name);
    free(v->identity);
    free(v);
    return NULL;
}

WorkspaceRecord *workspace_record_free(WorkspaceRecord *w) {
    if (!w)
        return NULL;
    free(w->id);
    free(w->tenant);
    strv_free(w->labels);
    free(w->volume);
    free(w->state_dir);
    free(w->mountpoint);
    free(w);
    return NULL;
}

StateRecord *state_record_free(StateRecord *s) {
    if (!s)
        return NULL;
    for (size_t i = 0; i < s->n_volumes; i++)
        volume_record_free(s->volumes[i]);
    free(s->volumes);
    for (size_t i = 0; i < s->n_workspaces; i++)
        workspace_record_free(s->workspaces[i]);
    free(s->workspaces);
    free(s);
    return NULL;
}

int volume_record_copy(const VolumeRecord *v, VolumeRecord **ret) {
    if (!v || !ret)
        return -EINVAL;
    _cleanup_(volume_record_freep) VolumeRecord *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    *c = (VolumeRecord) {
        .role = v->role,
        .index = v->index,
        .backend = v->backend,
        .size = v->size,
        .created_file = v->created_file,
        .formatted = v->formatted,
        .created_at = v->created_at,
    };
    if (strdup_ptr(v->name, &c->name) < 0 || strdup_ptr(v->backing_path, &c->backing_path) < 0 ||
        strdup_ptr(v->fs_type, &c->fs_type) < 0 || strdup_ptr(v->fs_uuid, &c->fs_uuid) < 0 ||
        strdup_ptr(v->fs_label, &c->fs_label) < 0 || strdup_ptr(v->dm_name, &c->dm_name) < 0 ||
        strdup_ptr(v->identity, &c->identity) < 0)
        return -ENOMEM;
    *ret = TAKE_PTR(c);
    return 0;
}

int workspace_record_copy(const WorkspaceRecord *w, WorkspaceRecord **ret) {
    if (!w || !ret)
        return -EINVAL;
    _cleanup_(workspace_record_freep) WorkspaceRecord *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    *c = (WorkspaceRecord) {
        .quota = w->quota,
        .quota_changing = w->quota_changing,
        .quota_pending = w->quota_pending,
        .project_id = w->project_id,
        .active = w->active,
        .creating = w->creating,
        .created_at = w->created_at,
        .daemon = w->daemon,
    };
    if (strdup_ptr(w->id, &c->id) < 0 || strdup_ptr(w->tenant, &c->tenant) < 0 ||
        strdup_ptr(w->volume, &c->volume) < 0 || strdup_ptr(w->state_dir, &c->state_dir) < 0 ||
        strdup_ptr(w->mountpoint, &c->mountpoint) < 0)
        return -ENOMEM;
    if (w->labels && strv_copy((const char *const *) w->labels, &c->labels) < 0)
        return -ENOMEM;
    *ret = TAKE_PTR(c);
    return 0;
}

/* ---- lookups and edits ------------------------------------------------- */

VolumeRecord *state_record_find_volume(const StateRecord *s, const char *name) {
    if (!s || !name)
        return NULL;
    for (size_t i = 0; i < s->n_volumes; i++)
        if (streq_ptr(s->volumes[i]->name, name))
            return s->volumes[i];
    return NULL;
}

WorkspaceRecord *state_record_find_workspace(const StateRecord *s, const char *id) {
    if (!s || !id)
        return NULL;
    for (size_t i = 0; i < s->n_workspaces; i++)
        if (streq_ptr(s->workspaces[i]->id, id))
            return s->workspaces[i];
    return NULL;
}

/* Appends an owned pointer to an array; on failure the item stays the caller's. */
static int array_push(void ***array, size_t *n, void *item) {
    void **t = realloc(*array, sizeof(void *) * (*n + 1));
    if (!t)
        return -ENOMEM;
    t[(*n)++] = item;
    *array = t;
    return 0;
}

int state_record_add_volume(StateRecord *s, const VolumeRecord *v, VolumeRecord **ret) {
    if (!s || !v || isempty(v->name))
        return -EINVAL;
    if (state_record_find_volume(s, v->name))
        return -EEXIST;
    _cleanup_(volume_record_freep) VolumeRecord *c = NULL;
    int r = volume_record_copy(v, &c);
    if (r < 0)
        return r;
    r = array_push((void ***) &s->volumes, &s->n_volumes, c);
    if (r < 0)
        return r;
    if (ret)
        *ret = c;
    TAKE_PTR(c);
    return 0;
}

int state_record_add_workspace(StateRecord *s, const WorkspaceRecord *w, WorkspaceRecord **ret) {
    if (!s || !w || isempty(w->id))
        return -EINVAL;
    if (state_record_find_workspace(s, w->id))
        return -EEXIST;
    _cleanup_(workspace_record_freep) WorkspaceRecord *c = NULL;
    int r = workspace_record_copy(w, &c);
    if (r < 0)
        return r;
    r = array_push((void ***) &s->workspaces, &s->n_workspaces, c);
    if (r < 0)
        return r;
    if (ret)
        *ret = c;
    TAKE_PTR(c);
    return 0;
}

int state_record_put_volume(StateRecord *s, VolumeRecord *v) {
    if (!s || !v || isempty(v->name))
        return -EINVAL;
    for (size_t i = 0; i < s->n_volumes; i++)
        if (streq_ptr(s->volumes[i]->name, v->name)) {
            volume_record_free(s->volumes[i]);
            s->volumes[i] = v;
            return 0;
        }
    return array_push((void ***) &s->volumes, &s->n_volumes, v);
}

int state_record_remove_volume(StateRecord *s, const char *name) {
    if (!s || !name)
        return -EINVAL;
    for (size_t i = 0; i < s->n_volumes; i++)
        if (streq_ptr(s->volumes[i]->name, name)) {
            volume_record_free(s->volumes[i]);
            memmove(s->volumes + i, s->volumes + i + 1, sizeof(void *) * (s->n_volumes - i - 1));
            s->n_volumes--;
            return 0;
        }
    return -ENOENT;
}

int state_record_remove_workspace(StateRecord *s, const char *id) {
    if (!s || !id)
        return -EINVAL;
    for (size_t i = 0; i < s->n_workspaces; i++)
        if (streq_ptr(s->workspaces[i]->id, id)) {
            workspace_record_free(s->workspaces[i]);
            memmove(s->workspaces + i, s->workspaces + i + 1,
                    sizeof(void *) * (s->n_workspaces - i - 1));
            s->n_workspaces--;
            return 0;
        }
    return -ENOENT;
}

size_t state_record_count_workspaces(const StateRecord *s, const char *volume) {
    size_t n = 0;
    if (!s || !volume)
        return 0;
    for (size_t i = 0; i < s->n_workspaces; i++)
        if ((s->workspaces[i]->active || s->workspaces[i]->creating) && streq_ptr(s->workspaces[i]->volume, volume))
            n++;
    return n;
}

/* ---- serialisation ----------------------------------------------------- */

static int add(json_object *o, const char *key, json_object *v) {
    if (!v)
        return -ENOMEM;
    if (json_object_object_add(o, key, v) < 0) {
        json_object_put(v);
        return -ENOMEM;
    }
    return 0;
}

/* NULL strings are written as JSON null, so that a reader sees every field. */
static int add_str(json_object *o, const char *key, const char *s) {
    if (!s)
        return json_object_object_add(o, key, NULL) < 0 ? -ENOMEM : 0;
    return add(o, key, json_object_new_string(s));
}

int volume_record_to_json(const VolumeRecord *v, json_object **ret) {
    _cleanup_json_ json_object *o = json_object_new_object();
    if (!o)
        return -ENOMEM;
    const char *role = pool_role_to_string(v->role), *backend = backend_to_string(v->backend);
    if (!role || !backend)
        return -EINVAL;
    if (add_str(o, "name", v->name) < 0 || add_str(o, "role", role) < 0 ||
        add(o, "index", json_object_new_uint64(v->index)) < 0 ||
        add_str(o, "backend", backend) < 0 || add_str(o, "backing_path", v->backing_path) < 0 ||
        add(o, "size", json_object_new_uint64(v->size)) < 0 ||
        add(o, "created_file", json_object_new_boolean(v->created_file)) < 0 ||
        add(o, "formatted", json_object_new_boolean(v->formatted)) < 0 ||
        add_str(o, "fs_type", v->fs_type) < 0 || add_str(o, "fs_uuid", v->fs_uuid) < 0 ||
        add_str(o, "fs_label", v->fs_label) < 0 || add_str(o, "dm_name", v->dm_name) < 0 ||
        add_str(o, "identity", v->identity) < 0 ||
        add(o, "created_at", json_object_new_uint64(v->created_at)) < 0)
        return -ENOMEM;
    *ret = TAKE_PTR(o);
    return 0;
}

static int workspace_to_json(const WorkspaceRecord *w, json_object **ret) {
    _cleanup_json_ json_object *o = json_object_new_object();
    _cleanup_json_ json_object *labels = json_object_new_array();
    _cleanup_json_ json_object *d = json_object_new_object();
    if (!o || !labels || !d)
        return -ENOMEM;
    for (char **l = w->labels; l && *l; l++) {
        json_object *s = json_object_new_string(*l);
        if (!s || json_object_array_add(labels, s) < 0) {
            json_object_put(s);
            return -ENOMEM;
        }
    }
    char devbuf[64];
    snprintf(devbuf, sizeof(devbuf), "%u:%u", major(w->daemon.mount_dev), minor(w->daemon.mount_dev));
    if (add(d, "pid", json_object_new_int64(w->daemon.pid)) < 0 ||
        add(d, "start_time", json_object_new_uint64(w->daemon.start_time)) < 0 ||
        add_str(d, "boot_id", w->daemon.boot_id[0] ? w->daemon.boot_id : NULL) < 0 ||
        add(d, "boot_id_hash", json_object_new_uint64(w->daemon.boot_id_hash)) < 0 ||
        add_str(d, "mount_dev", devbuf) < 0 ||
        add(d, "restarts", json_object_new_uint64(w->daemon.restarts)) < 0)
        return -ENOMEM;
    if (add_str(o, "id", w->id) < 0 || add_str(o, "tenant", w->tenant) < 0 ||
        add(o, "quota", json_object_new_uint64(w->quota)) < 0 ||
        (w->quota_changing && add(o, "quota_pending", json_object_new_uint64(w->quota_pending)) < 0) ||
        (w->project_id && add(o, "project_id", json_object_new_uint64(w->project_id)) < 0) ||
        add(o, "labels", TAKE_PTR(labels)) < 0 || add_str(o, "volume", w->volume) < 0 ||
        add_str(o, "state_dir", w->state_dir) < 0 || add_str(o, "mountpoint", w->mountpoint) < 0 ||
        add(o, "active", json_object_new_boolean(w->active)) < 0 ||
        (w->creating && add(o, "creating", json_object_new_boolean(true)) < 0) ||
        add(o, "created_at", json_object_new_uint64(w->created_at)) < 0 ||
        add(o, "daemon", TAKE_PTR(d)) < 0)
        return -ENOMEM;
    *ret = TAKE_PTR(o);
    return 0;
}

int state_record_to_json(const StateRecord *s, json_object **ret) {
    if (!s || !ret)
        return -EINVAL;
    _cleanup_json_ json_object *root = json_object_new_object();
    _cleanup_json_ json_object *vols = json_object_new_array();
    _cleanup_json_ json_object *wss = json_object_new_array();
    int r;
    if (!root || !vols || !wss)
        return -ENOMEM;
    for (size_t i = 0; i < s->n_volumes; i++) {
        json_object *o;
        r = volume_record_to_json(s->volumes[i], &o);
        if (r < 0)
            return r;
        if (json_object_array_add(vols, o) < 0) {
            json_object_put(o);
            return -ENOMEM;
        }
    }
    for (size_t i = 0; i < s->n_workspaces; i++) {
        json_object *o;
        r = workspace_to_json(s->workspaces[i], &o);
        if (r < 0)
            return r;
        if (json_object_array_add(wss, o) < 0) {
            json_object_put(o);
            return -ENOMEM;
        }
    }
    if (add(root, "version", json_object_new_uint64(s->version ?: STATE_RECORD_VERSION)) < 0 ||
        add(root, "generation", json_object_new_uint64(s->generation)) < 0 ||
        add(root, "volumes", TAKE_PTR(vols)) < 0 || add(root, "workspaces", TAKE_PTR(wss)) < 0)
        return -ENOMEM;
    *ret = TAKE_PTR(root);
    return 0;
}

int state_record_to_json_string(const StateRecord *s, char **ret) {
    if (!s || !ret)
        return -EINVAL;
    _cleanup_json_ json_object *root = NULL;
    int r = state_record_to_json(s, &root);
    if (r < 0)
        return r;
    const char *text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
                                                                JSON_C_TO_STRING_SPACED |
                                                                JSON_C_TO_STRING_NOSLASHESCAPE);
    if (!text)
        return -ENOMEM;
    char *c = strdup(text);
    if (!c)
        return -ENOMEM;
    *ret = c;
    return 0;
}

/* Strict field readers: a present field of the wrong type is -EBADMSG. */
static int get_u64(json_object *o, const char *key, bool required, uint64_t *ret) {
    json_object *v;
    if (!json_object_object_get_ex(o, key, &v) || !v) {
        if (required)
            return -EBADMSG;
        *ret = 0;
        return 0;
    }
    if (!json_object_is_type(v, json_type_int))
        return -EBADMSG;
    /* json-c stores negative numbers as int64; refuse them for unsigned fields. */
    if (json_object_get_int64(v) < 0 && json_object_get_uint64(v) == 0)
        return -EBADMSG;
    errno = 0;
    uint64_t u = json_object_get_uint64(v);
    if (errno != 0)
        return -EBADMSG;
    *ret = u;
    return 0;
}

static int get_u32(json_object *o, const char *key, bool required, unsigned *ret) {
    uint64_t u;
    int r = get_u64(o, key, required, &u);
    if (r < 0)
        return r;
    if (u > UINT32_MAX)
        return -EBADMSG;
    *ret = (unsigned) u;
    return 0;
}

static int get_bool(json_object *o, const char *key, bool *ret) {
    json_object *v;
    if (!json_object_object_get_ex(o, key, &v) || !v) {
        *ret = false;
        return 0;
    }
    if (!json_object_is_type(v, json_type_boolean))
        return -EBADMSG;
    *ret = json_object_get_boolean(v);
    return 0;
}

/* Optional string (NULL when absent or null). */
static int get_str(json_object *o, const char *key, bool required, char **ret) {
    json_object *v;
    if (!json_object_object_get_ex(o, key, &v) || !v) {
        if (required)
            return -EBADMSG;
        *ret = NULL;
        return 0;
    }
    if (!json_object_is_type(v, json_type_string))
        return -EBADMSG;
    const char *s = json_object_get_string(v);
    if (required && isempty(s))
        return -EBADMSG;
    return strdup_ptr(s, ret);
}

int volume_record_from_json(json_object *o, VolumeRecord **ret) {
    if (!json_object_is_type(o, json_type_object))
        return -EBADMSG;
    _cleanup_(volume_record_freep) VolumeRecord *v = calloc(1, sizeof(*v));
    _cleanup_free_ char *role = NULL, *backend = NULL;
    int r;
    if (!v)
        return -ENOMEM;
    if ((r = get_str(o, "name", true, &v->name)) < 0 || (r = get_str(o, "role", true, &role)) < 0 ||
        (r = get_u32(o, "index", true, &v->index)) < 0 ||
        (r = get_str(o, "backend", true, &backend)) < 0 ||
        (r = get_str(o, "backing_path", false, &v->backing_path)) < 0 ||
        (r = get_u64(o, "size", false, &v->size)) < 0 ||
        (r = get_bool(o, "created_file", &v->created_file)) < 0 ||
        (r = get_bool(o, "formatted", &v->formatted)) < 0 ||
        (r = get_str(o, "fs_type", false, &v->fs_type)) < 0 ||
        (r = get_str(o, "fs_uuid", false, &v->fs_uuid)) < 0 ||
        (r = get_str(o, "fs_label", false, &v->fs_label)) < 0 ||
        (r = get_str(o, "dm_name", false, &v->dm_name)) < 0 ||
        (r = get_str(o, "identity", false, &v->identity)) < 0 ||
        (r = get_u64(o, "created_at", false, &v->created_at)) < 0)
        return r;
    v->role = pool_role_from_string(role);
    v->backend = backend_from_string(backend);
    if ((int) v->role < 0 || (int) v->backend < 0)
        return -EBADMSG;
    if (!layout_name_is_valid(v->name, LAYOUT_NAME_MAX))
        return -EBADMSG;
    /* A record claiming a formatted volume without the UUID that
     * identifies it would let the agent adopt any filesystem. */
    if (v->formatted && (isempty(v->fs_uuid) || isempty(v->fs_type)))
        return -EBADMSG;
    *ret = TAKE_PTR(v);
    return 0;
}

static int workspace_from_json(json_object *o, WorkspaceRecord **ret) {
    if (!json_object_is_type(o, json_type_object))
        return -EBADMSG;
    _cleanup_(workspace_record_freep) WorkspaceRecord *w = calloc(1, sizeof(*w));
    uint64_t project = 0;
    int r;
    if (!w)
        return -ENOMEM;
    if ((r = get_str(o, "id", true, &w->id)) < 0 || (r = get_str(o, "tenant", false, &w->tenant)) < 0 ||
        (r = get_u64(o, "quota", false, &w->quota)) < 0 ||
        (r = get_str(o, "volume", false, &w->volume)) < 0 ||
        (r = get_str(o, "state_dir", false, &w->state_dir)) < 0 ||
        (r = get_str(o, "mountpoint", false, &w->mountpoint)) < 0 ||
        (r = get_bool(o, "active", &w->active)) < 0 || (r = get_bool(o, "creating", &w->creating)) < 0 ||
        (r = get_u64(o, "created_at", false, &w->created_at)) < 0 ||
        (r = get_u64(o, "project_id", false, &project)) < 0 ||
        (r = get_u64(o, "quota_pending", false, &w->quota_pending)) < 0)
        return r;
    if (project > UINT32_MAX)
        return -EBADMSG;
    w->project_id = (uint32_t) project;
    /* Present (0 too: a quota being removed) only while a change runs. */
    json_object *pending;
    w->quota_changing = json_object_object_get_ex(o, "quota_pending", &pending) && pending;

    json_object *labels;
    if (json_object_object_get_ex(o, "labels", &labels) && labels) {
        if (!json_object_is_type(labels, json_type_array))
            return -EBADMSG;
        size_t n = json_object_array_length(labels);
        for (size_t i = 0; i < n; i++) {
            json_object *l = json_object_array_get_idx(labels, i);
            if (!json_object_is_type(l, json_type_string))
                return -EBADMSG;
            if (strv_extend(&w->labels, json_object_get_string(l)) < 0)
                return -ENOMEM;
        }
    }

    json_object *d;
    if (json_object_object_get_ex(o, "daemon", &d) && d) {
        if (!json_object_is_type(d, json_type_object))
            return -EBADMSG;
        json_object *pid;
        if (json_object_object_get_ex(d, "pid", &pid) && pid) {
            if (!json_object_is_type(pid, json_type_int))
                return -EBADMSG;
            int64_t p = json_object_get_int64(pid);
            if (p < 0 || p > INT32_MAX)
                return -EBADMSG;
            w->daemon.pid = (pid_t) p;
        }
        _cleanup_free_ char *dev = NULL, *boot = NULL;
        if ((r = get_str(d, "boot_id", false, &boot)) < 0)
            return r;
        if (boot) {
            if (strlen(boot) != 32 || strspn(boot, "0123456789abcdef") != 32)
                return -EBADMSG;
            memcpy(w->daemon.boot_id, boot, 33);
        }
        if ((r = get_u64(d, "start_time", false, &w->daemon.start_time)) < 0 ||
            (r = get_u64(d, "boot_id_hash", false, &w->daemon.boot_id_hash)) < 0 ||
            (r = get_u32(d, "restarts", false, &w->daemon.restarts)) < 0 ||
            (r = get_str(d, "mount_dev", false, &dev)) < 0)
            return r;
        if (dev) {
            unsigned ma, mi;
            char tail;
            if (sscanf(dev, "%u:%u%c", &ma, &mi, &tail) != 2)
                return -EBADMSG;
            w->daemon.mount_dev = makedev(ma, mi);
        }
    }
    *ret = TAKE_PTR(w);
    return 0;
}

int state_record_from_json_string(const char *text, StateRecord **ret) {
    if (!text || !ret)
        return -EINVAL;
    /* Parse with an explicit tokener so that trailing garbage after the
     * object (a torn concatenation) is an error, not silently ignored. */
    size_t len = strlen(text);
    if (len > INT32_MAX)
        return -EFBIG;
    json_tokener *tok = json_tokener_new();
    if (!tok)
        return -ENOMEM;
    _cleanup_json_ json_object *root = json_tokener_parse_ex(tok, text, (int) len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (!root || jerr != json_tokener_success)
        return -EBADMSG;
    for (; end < len; end++)
        if (!strchr(" \t\r\n", text[end]))
            return -EBADMSG;
    if (!json_object_is_type(root, json_type_object))
        return -EBADMSG;

    unsigned version;
    int r = get_u32(root, "version", true, &version);
    if (r < 0)
        return r;
    if (version == 0)
        return -EBADMSG;
    if (version > STATE_RECORD_VERSION)
        return -EPROTONOSUPPORT;

    _cleanup_(state_record_freep) StateRecord *s = NULL;
    r = state_record_new(&s);
    if (r < 0)
        return r;
    r = get_u64(root, "generation", false, &s->generation);
    if (r < 0)
        return r;

    json_object *vols, *wss;
    if (json_object_object_get_ex(root, "volumes", &vols) && vols) {
        if (!json_object_is_type(vols, json_type_array))
            return -EBADMSG;
        for (size_t i = 0; i < json_object_array_length(vols); i++) {
            _cleanup_(volume_record_freep) VolumeRecord *v = NULL;
            r = volume_record_from_json(json_object_array_get_idx(vols, i), &v);
            if (r < 0)
                return r;
            if (state_record_find_volume(s, v->name))
                return -EBADMSG; /* duplicate names: which one is true? */
            r = array_push((void ***) &s->volumes, &s->n_volumes, v);
            if (r < 0)
                return r;
            TAKE_PTR(v);
        }
    }
    if (json_object_object_get_ex(root, "workspaces", &wss) && wss) {
        if (!json_object_is_type(wss, json_type_array))
            return -EBADMSG;
        for (size_t i = 0; i < json_object_array_length(wss); i++) {
            _cleanup_(workspace_record_freep) WorkspaceRecord *w = NULL;
            r = workspace_from_json(json_object_array_get_idx(wss, i), &w);
            if (r < 0)
                return r;
            if (state_record_find_workspace(s, w->id))
                return -EBADMSG;
            r = array_push((void ***) &s->workspaces, &s->n_workspaces, w);
            if (r < 0)
                return r;
            TAKE_PTR(w);
        }
    }
    *ret = TAKE_PTR(s);
    return 0;
}

int state_record_load(const char *path, StateRecord **ret) {
    if (!path || !ret)
        return -EINVAL;
    _cleanup_free_ char *text = NULL;
    size_t len;
    int r = read_full_file(path, &text, &len);
    if (r == -ENOENT)
        return state_record_new(ret);
    if (r < 0)
        return r;
    /* An embedded NUL means a torn or foreign file, not JSON. */
    if (strlen(text) != len)
        return -EBADMSG;
    return state_record_from_json_string(text, ret);
}

int state_record_snapshot(StateRecord *s, char **ret_text, size_t *ret_len) {
    if (!s || !ret_text || !ret_len)
        return -EINVAL;
    uint64_t old = s->generation;
    s->generation = old + 1;
    _cleanup_free_ char *text = NULL;
    int r = state_record_to_json_string(s, &text);
    if (r < 0) {
        s->generation = old; /* nothing was made of it: keep the counter honest */
        return r;
    }
    size_t n = strlen(text);
    /* Terminate with a newline: friendlier to cat and diff. */
    char *t = realloc(text, n + 2);
    if (!t) {
        s->generation = old;
        return -ENOMEM;
    }
    t[n] = '\n';
    t[n + 1] = 0;
    text = NULL;
    *ret_text = t;
    *ret_len = n + 1;
    return 0;
}

int state_record_save(StateRecord *s, const char *path) {
    if (!s || !path)
        return -EINVAL;
    _cleanup_free_ char *text = NULL;
    size_t len;
    int r = state_record_snapshot(s, &text, &len);
    if (r < 0)
        return r;
    r = write_file_atomic(path, text, len, 0600);
    if (r < 0) {
        s->generation--; /* the file was not written: keep the counter honest */
        return r;
    }
    return 0;
}
