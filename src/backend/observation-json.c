/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The observation as JSON, every field, both ways: it is how a worker's
 * observation reaches the agent, so the codec is a table of fields (name,
 * type, offset) per struct rather than hand-written code per field that
 * could drift between the two directions.
 */
#include <errno.h>
#include <stddef.h>
#include <sys/sysmacros.h>

#include "observation.h"
#include "util.h"

typedef enum FieldType {
    F_BOOL,
    F_INT,
    F_UINT,
    F_U64,
    F_STR,
    F_DEV,       /* "major:minor" */
    F_ROLE,
    F_BACKEND,
    F_VDO_MODE,
    F_VDO_INDEX,
    F_OBJECT,    /* a nested struct, described by `fields` */
} FieldType;

typedef struct Field {
    const char *name;
    FieldType type;
    size_t offset;
    const struct Field *fields; /* F_OBJECT */
} Field;

#define FLD(T, s, f) { #f, T, offsetof(s, f), NULL }
#define OBJ(s, f, sub) { #f, F_OBJECT, offsetof(s, f), sub }
#define END { NULL, 0, 0, NULL }

static const Field loop_fields[] = {
    FLD(F_STR, LoopInfo, node),          FLD(F_INT, LoopInfo, nr),        FLD(F_DEV, LoopInfo, devno),
    FLD(F_STR, LoopInfo, backing_file),  FLD(F_BOOL, LoopInfo, direct_io), FLD(F_BOOL, LoopInfo, autoclear),
    FLD(F_BOOL, LoopInfo, read_only),    FLD(F_UINT, LoopInfo, logical_block_size),
    FLD(F_U64, LoopInfo, size),          END,
};

static const Field probe_fields[] = {
    FLD(F_BOOL, ProbeResult, blank), FLD(F_STR, ProbeResult, type), FLD(F_STR, ProbeResult, uuid),
    FLD(F_STR, ProbeResult, label),  FLD(F_STR, ProbeResult, usage), END,
};

static const Field mount_fields[] = {
    FLD(F_STR, MountInfo, target),  FLD(F_STR, MountInfo, source), FLD(F_STR, MountInfo, fstype),
    FLD(F_STR, MountInfo, options), FLD(F_DEV, MountInfo, devno),  FLD(F_INT, MountInfo, id), END,
};

static const Field bdi_fields[] = {
    FLD(F_INT, BdiLimits, max_ratio),      FLD(F_U64, BdiLimits, max_bytes),
    FLD(F_INT, BdiLimits, strict_limit),   FLD(F_BOOL, BdiLimits, has_max_bytes),
    FLD(F_BOOL, BdiLimits, has_strict_limit), END,
};

static const Field io_fields[] = {
    FLD(F_U64, LoopIoStats, read_ios),  FLD(F_U64, LoopIoStats, read_sectors), FLD(F_U64, LoopIoStats, write_ios),
    FLD(F_U64, LoopIoStats, write_sectors), FLD(F_U64, LoopIoStats, in_flight),
    FLD(F_U64, LoopIoStats, io_ticks_ms), END,
};

static const Field vdo_fields[] = {
    FLD(F_VDO_MODE, VdoStats, mode),
    FLD(F_BOOL, VdoStats, in_recovery),
    FLD(F_VDO_INDEX, VdoStats, index_state),
    FLD(F_BOOL, VdoStats, compression_online),
    FLD(F_U64, VdoStats, physical_used),
    FLD(F_U64, VdoStats, physical_total),
    FLD(F_BOOL, VdoStats, has_message),
    FLD(F_UINT, VdoStats, version),
    FLD(F_U64, VdoStats, data_blocks_used),
    FLD(F_U64, VdoStats, overhead_blocks_used),
    FLD(F_U64, VdoStats, logical_blocks_used),
    FLD(F_U64, VdoStats, logical_blocks),
    FLD(F_U64, VdoStats, physical_blocks),
    FLD(F_U64, VdoStats, block_size),
    FLD(F_UINT, VdoStats, recovery_percentage),
    FLD(F_U64, VdoStats, complete_recoveries),
    FLD(F_U64, VdoStats, read_only_recoveries),
    FLD(F_U64, VdoStats, no_space_errors),
    FLD(F_U64, VdoStats, read_only_errors),
    FLD(F_U64, VdoStats, dedupe_advice_valid),
    FLD(F_U64, VdoStats, compressed_fragments_written),
    FLD(F_INT, VdoStats, saving_percent),
    FLD(F_BOOL, VdoStats, degraded),
    END,
};

#define V VolumeObservation
static const Field volume_fields[] = {
    FLD(F_STR, V, name),
    FLD(F_ROLE, V, role),
    FLD(F_UINT, V, index),
    FLD(F_BACKEND, V, backend),
    FLD(F_BOOL, V, declared),
    FLD(F_STR, V, backing_path),
    FLD(F_STR, V, mount_path),
    FLD(F_BOOL, V, file_exists),
    FLD(F_INT, V, file_error),
    FLD(F_BOOL, V, file_is_regular),
    FLD(F_BOOL, V, file_is_block),
    FLD(F_U64, V, file_size),
    FLD(F_U64, V, file_allocated),
    FLD(F_BOOL, V, attached),
    OBJ(V, loop, loop_fields),
    FLD(F_BOOL, V, has_bdi),
    OBJ(V, bdi, bdi_fields),
    FLD(F_BOOL, V, has_io),
    OBJ(V, io, io_fields),
    FLD(F_BOOL, V, probed),
    FLD(F_INT, V, probe_error),
    OBJ(V, probe, probe_fields),
    FLD(F_BOOL, V, dm_up),
    FLD(F_STR, V, dm_name),
    FLD(F_STR, V, dm_node),
    FLD(F_DEV, V, dm_devno),
    FLD(F_BOOL, V, fs_probed),
    FLD(F_INT, V, fs_probe_error),
    OBJ(V, fs_probe, probe_fields),
    FLD(F_BOOL, V, has_vdo_stats),
    OBJ(V, vdo, vdo_fields),
    FLD(F_STR, V, vdo_error),
    FLD(F_BOOL, V, dir_exists),
    FLD(F_BOOL, V, mounted),
    OBJ(V, mount, mount_fields),
    FLD(F_BOOL, V, mounted_ours),
    FLD(F_BOOL, V, loop_mounted_elsewhere),
    OBJ(V, loop_mount, mount_fields),
    FLD(F_BOOL, V, has_statvfs),
    FLD(F_U64, V, fs_size),
    FLD(F_U64, V, fs_used),
    FLD(F_U64, V, fs_avail),
    FLD(F_U64, V, fs_inodes),
    FLD(F_U64, V, fs_inodes_free),
    FLD(F_BOOL, V, fs_read_only),
    FLD(F_BOOL, V, has_fs_errors),
    FLD(F_U64, V, fs_errors),
    FLD(F_BOOL, V, fs_emergency_ro),
    FLD(F_BOOL, V, fs_shutdown),
    FLD(F_INT, V, statvfs_error),
    FLD(F_STR, V, identity),
    FLD(F_INT, V, identity_error),
    END,
};
#undef V

static int encode(const Field *fields, const void *base, json_object **ret) {
    json_object *o = json_object_new_object();
    if (!o)
        return -ENOMEM;
    for (const Field *f = fields; f->name; f++) {
        const char *p = (const char *) base + f->offset;
        json_object *v = NULL;
        char dev[32];
        int r;
        switch (f->type) {
        case F_BOOL:
            v = json_object_new_boolean(*(const bool *) p);
            break;
        case F_INT:
            v = json_object_new_int(*(const int *) p);
            break;
        case F_UINT:
            v = json_object_new_int64(*(const unsigned *) p);
            break;
        case F_U64:
            v = json_object_new_uint64(*(const uint64_t *) p);
            break;
        case F_STR:
            if (*(char *const *) p && !(v = json_object_new_string(*(char *const *) p)))
                goto oom;
            break;
        case F_DEV: {
            dev_t d = *(const dev_t *) p;
            snprintf(dev, sizeof dev, "%u:%u", major(d), minor(d));
            v = json_object_new_string(dev);
            break;
        }
        case F_ROLE:
            v = json_object_new_string(pool_role_to_string(*(const PoolRole *) p) ?: "?");
            break;
        case F_BACKEND:
            v = json_object_new_string(backend_to_string(*(const Backend *) p) ?: "?");
            break;
        case F_VDO_MODE:
            v = json_object_new_string(vdo_mode_to_string(*(const VdoMode *) p) ?: "unknown");
            break;
        case F_VDO_INDEX:
            v = json_object_new_string(vdo_index_state_to_string(*(const VdoIndexState *) p) ?: "unknown");
            break;
        case F_OBJECT:
            r = encode(f->fields, p, &v);
            if (r < 0) {
                json_object_put(o);
                return r;
            }
            break;
        }
        if (!v && f->type != F_STR)
            goto oom;
        if (json_object_object_add(o, f->name, v) < 0) {
            json_object_put(v);
            goto oom;
        }
    }
    *ret = o;
    return 0;
oom:
    json_object_put(o);
    return -ENOMEM;
}

static int decode(const Field *fields, json_object *o, void *base) {
    if (!json_object_is_type(o, json_type_object))
        return -EBADMSG;
    for (const Field *f = fields; f->name; f++) {
        char *p = (char *) base + f->offset;
        json_object *v = NULL;
        if (!json_object_object_get_ex(o, f->name, &v) || !v)
            continue; /* absent or null: the zero value */
        const char *s = json_object_get_string(v);
        unsigned ma, mi;
        int e, r;
        switch (f->type) {
        case F_BOOL:
            *(bool *) p = json_object_get_boolean(v);
            break;
        case F_INT:
            *(int *) p = json_object_get_int(v);
            break;
        case F_UINT:
            *(unsigned *) p = (unsigned) json_object_get_int64(v);
            break;
        case F_U64:
            *(uint64_t *) p = json_object_get_uint64(v);
            break;
        case F_STR:
            if (!(*(char **) p = strdup(s ?: "")))
                return -ENOMEM;
            break;
        case F_DEV:
            if (!s || sscanf(s, "%u:%u", &ma, &mi) != 2)
                return -EBADMSG;
            *(dev_t *) p = makedev(ma, mi);
            break;
        case F_ROLE:
            if ((e = pool_role_from_string(s)) < 0)
                return -EBADMSG;
            *(PoolRole *) p = e;
            break;
        case F_BACKEND:
            if ((e = backend_from_string(s)) < 0)
                return -EBADMSG;
            *(Backend *) p = e;
            break;
        case F_VDO_MODE:
            *(VdoMode *) p = (e = vdo_mode_from_string(s)) < 0 ? 0 : e;
            break;
        case F_VDO_INDEX:
            *(VdoIndexState *) p = (e = vdo_index_state_from_string(s)) < 0 ? VDO_INDEX_UNKNOWN : e;
            break;
        case F_OBJECT:
            r = decode(f->fields, v, p);
            if (r < 0)
                return r;
            break;
        }
    }
    return 0;
}

int observation_to_json(const Observation *ob, json_object **ret) {
    if (!ob || !ret)
        return -EINVAL;
    json_object *root = json_object_new_object(), *arr = json_object_new_array();
    if (!root || !arr) {
        json_object_put(root);
        json_object_put(arr);
        return -ENOMEM;
    }
    json_object_object_add(root, "volumes", arr);
    for (size_t i = 0; i < ob->n; i++) {
        json_object *v = NULL;
        int r = encode(volume_fields, &ob->volumes[i], &v);
        if (r < 0 || json_object_array_add(arr, v) < 0) {
            json_object_put(v);
            json_object_put(root);
            return r < 0 ? r : -ENOMEM;
        }
    }
    json_object_object_add(root, "has_backing_free", json_object_new_boolean(ob->has_backing_free));
    json_object_object_add(root, "backing_free", json_object_new_uint64(ob->backing_free));
    json_object_object_add(root, "backing_size", json_object_new_uint64(ob->backing_size));
    json_object_object_add(root, "taken_at", json_object_new_uint64(ob->taken_at));
    *ret = root;
    return 0;
}

int observation_from_json(json_object *j, Observation **ret) {
    json_object *arr, *v;
    if (!j || !ret || !json_object_object_get_ex(j, "volumes", &arr) || !json_object_is_type(arr, json_type_array))
        return -EBADMSG;
    _cleanup_(observation_freep) Observation *o = calloc(1, sizeof(*o));
    if (!o)
        return -ENOMEM;
    size_t n = json_object_array_length(arr);
    o->volumes = calloc(MAX(n, 1u), sizeof(VolumeObservation));
    if (!o->volumes)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        int r = decode(volume_fields, json_object_array_get_idx(arr, i), &o->volumes[i]);
        o->n++; /* counted even on failure, so that free sees what was allocated */
        if (r < 0)
            return r;
        if (!o->volumes[i].name)
            return -EBADMSG;
    }
    if (json_object_object_get_ex(j, "has_backing_free", &v))
        o->has_backing_free = json_object_get_boolean(v);
    if (json_object_object_get_ex(j, "backing_free", &v))
        o->backing_free = json_object_get_uint64(v);
    if (json_object_object_get_ex(j, "backing_size", &v))
        o->backing_size = json_object_get_uint64(v);
    if (json_object_object_get_ex(j, "taken_at", &v))
        o->taken_at = json_object_get_uint64(v);
    *ret = TAKE_PTR(o);
    return 0;
}

int observation_to_json_string(const Observation *o, char **ret) {
    json_object *j = NULL;
    int r = observation_to_json(o, &j);
    if (r < 0)
        return r;
    const char *t = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                           JSON_C_TO_STRING_NOSLASHESCAPE);
    char *c = t ? strdup(t) : NULL;
    json_object_put(j);
    if (!c)
        return -ENOMEM;
    *ret = c;
    return 0;
}
