/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Observing: the driver over every volume, and the pieces of an
 * observation that the device backends share (backing file, loop device,
 * probe, filesystem error counters).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "backend-internal.h"
#include "dev-util.h"
#include "fs-errors.h"
#include "identity.h"
#include "mount.h"
#include "util.h"
#include "volumes.h"

int backend_observe_backing(const VolumeSpec *spec, const Layout *l, VolumeObservation *o) {
    struct stat st;
    int r;
    /* The backing path: the record's if it has one (it may predate a
     * root change), else the pool's block device, else the convention. */
    if (spec->record && spec->record->backing_path)
        o->backing_path = strdup(spec->record->backing_path);
    else if (spec->pool && spec->pool->has_vdo && spec->pool->vdo.device)
        o->backing_path = strdup(spec->pool->vdo.device);
    else {
        r = layout_backing_path(l, spec->name, &o->backing_path);
        if (r < 0)
            return r;
    }
    if (!o->backing_path)
        return -ENOMEM;
    if (stat(o->backing_path, &st) == 0) {
        o->file_exists = true;
        o->file_is_regular = S_ISREG(st.st_mode);
        o->file_is_block = S_ISBLK(st.st_mode);
        o->file_size = (uint64_t) st.st_size;
        o->file_allocated = (uint64_t) st.st_blocks * 512;
    } else if (errno != ENOENT)
        o->file_error = errno;
    return 0;
}

int backend_observe_loop(VolumeObservation *o) {
    if (!o->file_exists || !o->file_is_regular)
        return 0;
    int r = loop_device_find_by_backing_file(o->backing_path, &o->loop);
    if (r == -ENOMEM)
        return r;
    if (r < 0)
        return 0;
    o->attached = true;
    if (bdi_read_limits(o->loop.devno, &o->bdi) >= 0)
        o->has_bdi = true;
    if (observe_loop_io_stats(o->loop.nr, &o->io) >= 0)
        o->has_io = true;
    return 0;
}

void backend_observe_probe(VolumeObservation *o, const char *node) {
    const char *what = node ?: (o->file_exists ? o->backing_path : NULL);
    if (!what)
        return;
    int r = probe_path(what, &o->probe);
    if (r >= 0)
        o->probed = true;
    else
        o->probe_error = -r;
}

/* The errors the filesystem counted since mkfs (a filesystem with errors
 * may go read-only, or be remounted so), where its FsType row says: ext4's
 * errors_count, btrfs's device stats. The device is the one behind the
 * mount; the UUID is the record's, or the probe's. */
static void observe_fs_errors(const VolumeSpec *spec, VolumeObservation *o) {
    const FsType *fs = o->mounted ? fs_type_find(o->mount.fstype) : NULL;
    if (!fs)
        return;
    const char *uuid = spec->record && spec->record->fs_uuid ? spec->record->fs_uuid
                       : streq_ptr(o->probe.type, fs->name) ? o->probe.uuid
                                                            : NULL;
    uint64_t v;
    if (fs_errors_read(fs, o->mount.devno, uuid, &v) >= 0) {
        o->has_fs_errors = true;
        o->fs_errors = v;
    }
}

/* A filesystem that stopped taking writes while still mounted rw: ext4
 * shows it in its mount options (emergency_ro, shutdown), XFS answers
 * statvfs with EIO once it has shut down. */
static void observe_fs_state(VolumeObservation *o) {
    if (!o->mounted)
        return;
    o->fs_emergency_ro = mount_options_has(o->mount.options, "emergency_ro");
    o->fs_shutdown = mount_options_has(o->mount.options, "shutdown") || o->statvfs_error == EIO;
}

static int observe_spec(const Layout *l, const VolumeSpec *spec, VolumeObservation *ret) {
    const VolumeBackend *b = volume_backend_get(spec->backend);
    struct stat st;
    if (!b)
        return -EINVAL;
    VolumeObservation o = {
        .role = spec->role,
        .index = spec->index,
        .backend = spec->backend,
        .declared = spec->declared,
    };
    int r;
    o.name = strdup(spec->name);
    if (!o.name) {
        r = -ENOMEM;
        goto fail;
    }
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
        goto fail;

    r = b->observe(l, spec, &o);
    if (r < 0)
        goto fail;
    if (volume_observation_is_up(&o)) {
        r = observe_statvfs(&o);
        if (r < 0)
            o.statvfs_error = -r;
        observe_fs_errors(spec, &o);
        observe_fs_state(&o);
        int k = volume_identity_read(o.mount_path, &o.identity);
        if (k == -ENOMEM) {
            r = k;
            goto fail;
        }
        o.identity_error = k < 0 ? -k : 0;
    }
    *ret = o;
    return 0;
fail:
    volume_observation_done(&o);
    return r;
}

/* Free space of the fs that will hold the backing files: the nearest
 * existing ancestor of <root>/images, since the directory may not exist
 * before the first apply. */
void volumes_observe_backing_free(const Layout *l, Observation *o) {
    _cleanup_free_ char *p = NULL;
    if (asprintf(&p, "%s/images", streq(l->root, "/") ? "" : l->root) < 0)
        return;
    for (;;) {
        struct statvfs sv;
        if (statvfs(p, &sv) == 0) {
            o->has_backing_free = true;
            o->backing_free = (uint64_t) sv.f_bavail * sv.f_frsize;
            o->backing_size = (uint64_t) sv.f_blocks * sv.f_frsize;
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

int volumes_observe(const Layout *l, const StateRecord *record, Observation **ret) {
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
        r = observe_spec(l, &specs.items[i], &o->volumes[i]);
        if (r < 0) {
            volume_spec_list_done(&specs);
            return r;
        }
        o->n++;
    }
    volume_spec_list_done(&specs);
    volumes_observe_backing_free(l, o);
    o->taken_at = now_usec(CLOCK_REALTIME);
    *ret = TAKE_PTR(o);
    return 0;
}

int volumes_observe_one(const Layout *l, const StateRecord *record, const char *name, VolumeObservation *ret) {
    VolumeSpecList specs = {};
    int r = volume_spec_list_compute(l, record, &specs);
    if (r < 0)
        return r;
    r = -ENOENT;
    for (size_t i = 0; i < specs.n; i++)
        if (streq(specs.items[i].name, name)) {
            r = observe_spec(l, &specs.items[i], ret);
            break;
        }
    volume_spec_list_done(&specs);
    return r;
}
