/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <libgen.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>

#include "observe.h"
#include "util.h"

void volume_observation_done(VolumeObservation *o) {
    if (!o)
        return;
    free(o->name);
    free(o->backing_path);
    free(o->mount_path);
    loop_info_done(&o->loop);
    probe_result_done(&o->probe);
    mount_info_done(&o->mount);
    mount_info_done(&o->loop_mount);
    *o = (VolumeObservation) {};
}

Observation *observation_free(Observation *o) {
    if (!o)
        return NULL;
    for (size_t i = 0; i < o->n; i++)
        volume_observation_done(&o->volumes[i]);
    free(o->volumes);
    free(o);
    return NULL;
}

const VolumeObservation *observation_find(const Observation *o, const char *name) {
    if (!o || !name)
        return NULL;
    for (size_t i = 0; i < o->n; i++)
        if (streq(o->volumes[i].name, name))
            return &o->volumes[i];
    return NULL;
}

int observe_loop_io_stats(int loop_nr, LoopIoStats *ret) {
    char path[64];
    _cleanup_free_ char *line = NULL;
    snprintf(path, sizeof(path), "/sys/block/loop%d/stat", loop_nr);
    int r = read_one_line_file(path, &line);
    if (r < 0)
        return r;
    uint64_t f[11] = {};
    int n = sscanf(line, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
                         " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64,
                   &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], &f[8], &f[9], &f[10]);
    if (n < 10)
        return -EBADMSG;
    *ret = (LoopIoStats) {
        .read_ios = f[0],
        .read_sectors = f[2],
        .write_ios = f[4],
        .write_sectors = f[6],
        .in_flight = f[8],
        .io_ticks_ms = f[9],
    };
    return 0;
}

static void observe_statvfs(VolumeObservation *o) {
    struct statvfs sv;
    if (statvfs(o->mount_path, &sv) < 0)
        return;
    o->has_statvfs = true;
    o->fs_size = (uint64_t) sv.f_blocks * sv.f_frsize;
    o->fs_used = (uint64_t) (sv.f_blocks - sv.f_bfree) * sv.f_frsize;
    o->fs_avail = (uint64_t) sv.f_bavail * sv.f_frsize;
    o->fs_inodes = sv.f_files;
    o->fs_inodes_free = sv.f_ffree;
}

int observe_volume(const Layout *l, const VolumeSpec *spec, VolumeObservation *ret) {
    if (!l || !spec || !ret)
        return -EINVAL;
    VolumeObservation o = {
        .role = spec->role,
        .index = spec->index,
        .backend = spec->backend,
        .declared = spec->declared,
    };
    int r;
    struct stat st;

    o.name = strdup(spec->name);
    if (!o.name)
        goto oom;
    r = layout_mount_path(l, spec->name, &o.mount_path);
    if (r < 0)
        goto fail;
    if (stat(o.mount_path, &st) == 0 && S_ISDIR(st.st_mode))
        o.dir_exists = true;

    /* What is mounted at the volume's mount path, whatever it is. */
    r = mount_find_by_target(o.mount_path, &o.mount);
    if (r >= 0)
        o.mounted = true;
    else if (r == -ENOMEM)
        goto oom;

    if (spec->backend == BACKEND_DIR) {
        /* A plain directory: no device, the statvfs is the host fs's. */
        if (o.dir_exists)
            observe_statvfs(&o);
        *ret = o;
        return 0;
    }

    /* The backing path: the record's if it has one (it may predate a
     * root change), else the layout's convention. */
    if (spec->record && spec->record->backing_path)
        o.backing_path = strdup(spec->record->backing_path);
    else if (spec->backend == BACKEND_VDO_XFS && spec->pool && spec->pool->has_vdo && spec->pool->vdo.device)
        o.backing_path = strdup(spec->pool->vdo.device);
    else {
        r = layout_backing_path(l, spec->name, &o.backing_path);
        if (r < 0)
            goto fail;
    }
    if (!o.backing_path)
        goto oom;

    if (stat(o.backing_path, &st) == 0) {
        o.file_exists = true;
        o.file_is_regular = S_ISREG(st.st_mode);
        o.file_size = (uint64_t) st.st_size;
        o.file_allocated = (uint64_t) st.st_blocks * 512;
    } else if (errno != ENOENT)
        o.file_error = errno;

    if (o.file_exists && o.file_is_regular) {
        r = loop_device_find_by_backing_file(o.backing_path, &o.loop);
        if (r >= 0)
            o.attached = true;
        else if (r == -ENOMEM)
            goto oom;
    }

    if (o.attached || o.file_exists) {
        r = probe_path(o.attached ? o.loop.node : o.backing_path, &o.probe);
        if (r >= 0)
            o.probed = true;
        else
            o.probe_error = -r;
    }

    if (o.attached) {
        if (o.mounted && o.mount.devno == o.loop.devno)
            o.mounted_ours = true;
        else {
            r = mount_find_by_devno(o.loop.devno, &o.loop_mount);
            if (r >= 0)
                o.loop_mounted_elsewhere = true;
        }
        if (bdi_read_limits(o.loop.devno, &o.bdi) >= 0)
            o.has_bdi = true;
        if (observe_loop_io_stats(o.loop.nr, &o.io) >= 0)
            o.has_io = true;
    }
    if (o.mounted_ours)
        observe_statvfs(&o);

    *ret = o;
    return 0;
oom:
    r = -ENOMEM;
fail:
    volume_observation_done(&o);
    return r;
}

/* Free space of the fs that will hold the backing files: the nearest
 * existing ancestor of <root>/images, since the directory may not exist
 * before the first apply. */
static void observe_backing_free(const Layout *l, Observation *o) {
    _cleanup_free_ char *p = NULL;
    if (asprintf(&p, "%s/images", streq(l->root, "/") ? "" : l->root) < 0)
        return;
    for (;;) {
        struct statvfs sv;
        if (statvfs(p, &sv) == 0) {
            o->has_backing_free = true;
            o->backing_free = (uint64_t) sv.f_bavail * sv.f_frsize;
            return;
        }
        if (errno != ENOENT || streq(p, "/"))
            return;
        char *slash = strrchr(p, '/');
        if (!slash)
            return;
        if (slash == p)
            slash[1] = 0;
        else
            *slash = 0;
    }
}

int observe_volumes(const Layout *l, const StateRecord *record, Observation **ret) {
    if (!l || !ret || !l->root)
        return -EINVAL;
    _cleanup_(observation_freep) Observation *o = calloc(1, sizeof(*o));
    VolumeSpecList specs = {};
    int r;
    if (!o)
        return -ENOMEM;
    r = volume_spec_list_compute(l, record, &specs);
    if (r < 0)
        return r;
    o->volumes = calloc(MAX(specs.n, 1u), sizeof(VolumeObservation));
    if (!o->volumes) {
        volume_spec_list_done(&specs);
        return -ENOMEM;
    }
    for (size_t i = 0; i < specs.n; i++) {
        r = observe_volume(l, &specs.items[i], &o->volumes[i]);
        if (r < 0) {
            volume_spec_list_done(&specs);
            return r;
        }
        o->n++;
    }
    volume_spec_list_done(&specs);
    observe_backing_free(l, o);
    *ret = TAKE_PTR(o);
    return 0;
}

/* ---- JSON -------------------------------------------------------------- */

static void jadd(json_object *o, const char *k, json_object *v) {
    json_object_object_add(o, k, v);
}
static json_object *jstr(const char *s) {
    return s ? json_object_new_string(s) : NULL;
}

int observation_to_json_string(const Observation *ob, char **ret) {
    if (!ob || !ret)
        return -EINVAL;
    json_object *root = json_object_new_object();
    json_object *arr = json_object_new_array();
    if (!root || !arr) {
        json_object_put(root);
        json_object_put(arr);
        return -ENOMEM;
    }
    for (size_t i = 0; i < ob->n; i++) {
        const VolumeObservation *v = &ob->volumes[i];
        json_object *o = json_object_new_object();
        if (!o)
            break;
        jadd(o, "name", jstr(v->name));
        jadd(o, "role", jstr(pool_role_to_string(v->role)));
        jadd(o, "backend", jstr(backend_to_string(v->backend)));
        jadd(o, "declared", json_object_new_boolean(v->declared));
        jadd(o, "backing_path", jstr(v->backing_path));
        jadd(o, "mount_path", jstr(v->mount_path));
        if (v->backing_path) {
            jadd(o, "file_exists", json_object_new_boolean(v->file_exists));
            jadd(o, "file_size", json_object_new_uint64(v->file_size));
            jadd(o, "file_allocated", json_object_new_uint64(v->file_allocated));
        }
        if (v->attached) {
            json_object *lo = json_object_new_object();
            jadd(lo, "node", jstr(v->loop.node));
            jadd(lo, "direct_io", json_object_new_boolean(v->loop.direct_io));
            jadd(lo, "autoclear", json_object_new_boolean(v->loop.autoclear));
            jadd(lo, "read_only", json_object_new_boolean(v->loop.read_only));
            jadd(lo, "logical_block_size", json_object_new_uint64(v->loop.logical_block_size));
            jadd(lo, "size", json_object_new_uint64(v->loop.size));
            jadd(o, "loop", lo);
        } else
            jadd(o, "loop", NULL);
        if (v->probed) {
            json_object *p = json_object_new_object();
            jadd(p, "blank", json_object_new_boolean(v->probe.blank));
            jadd(p, "type", jstr(v->probe.type));
            jadd(p, "uuid", jstr(v->probe.uuid));
            jadd(p, "label", jstr(v->probe.label));
            jadd(o, "signature", p);
        }
        jadd(o, "mounted", json_object_new_boolean(v->mounted_ours));
        if (v->mounted && !v->mounted_ours)
            jadd(o, "mount_path_occupied_by", jstr(v->mount.source));
        if (v->loop_mounted_elsewhere)
            jadd(o, "mounted_elsewhere", jstr(v->loop_mount.target));
        if (v->has_statvfs) {
            json_object *s = json_object_new_object();
            jadd(s, "size", json_object_new_uint64(v->fs_size));
            jadd(s, "used", json_object_new_uint64(v->fs_used));
            jadd(s, "avail", json_object_new_uint64(v->fs_avail));
            jadd(s, "inodes", json_object_new_uint64(v->fs_inodes));
            jadd(s, "inodes_free", json_object_new_uint64(v->fs_inodes_free));
            jadd(o, "fs", s);
        }
        if (v->has_bdi) {
            json_object *b = json_object_new_object();
            jadd(b, "max_ratio", json_object_new_int(v->bdi.max_ratio));
            if (v->bdi.has_max_bytes)
                jadd(b, "max_bytes", json_object_new_uint64(v->bdi.max_bytes));
            if (v->bdi.has_strict_limit)
                jadd(b, "strict_limit", json_object_new_int(v->bdi.strict_limit));
            jadd(o, "bdi", b);
        }
        if (v->has_io) {
            json_object *s = json_object_new_object();
            jadd(s, "read_ios", json_object_new_uint64(v->io.read_ios));
            jadd(s, "read_bytes", json_object_new_uint64(v->io.read_sectors * 512));
            jadd(s, "write_ios", json_object_new_uint64(v->io.write_ios));
            jadd(s, "write_bytes", json_object_new_uint64(v->io.write_sectors * 512));
            jadd(s, "in_flight", json_object_new_uint64(v->io.in_flight));
            jadd(o, "io", s);
        }
        json_object_array_add(arr, o);
    }
    jadd(root, "volumes", arr);
    if (ob->has_backing_free)
        jadd(root, "backing_free", json_object_new_uint64(ob->backing_free));
    const char *t = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                              JSON_C_TO_STRING_NOSLASHESCAPE);
    char *c = t ? strdup(t) : NULL;
    json_object_put(root);
    if (!c)
        return -ENOMEM;
    *ret = c;
    return 0;
}
