/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/statvfs.h>

#include "observation.h"
#include "quota.h"
#include "util.h"

void volume_observation_done(VolumeObservation *o) {
    if (!o)
        return;
    free(o->name);
    free(o->backing_path);
    free(o->mount_path);
    loop_info_done(&o->loop);
    probe_result_done(&o->probe);
    free(o->dm_name);
    free(o->dm_node);
    probe_result_done(&o->fs_probe);
    free(o->vdo_error);
    free(o->identity);
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

VolumeObservation *observation_find_mut(Observation *o, const char *name) {
    if (!o || !name)
        return NULL;
    for (size_t i = 0; i < o->n; i++)
        if (streq(o->volumes[i].name, name))
            return &o->volumes[i];
    return NULL;
}

const VolumeObservation *observation_find(const Observation *o, const char *name) {
    return observation_find_mut((Observation *) o, name);
}

bool volume_observation_is_up(const VolumeObservation *o) {
    const BackendTraits *t = backend_traits(o->backend);
    if (t && !t->has_device)
        return o->dir_exists && !o->mounted;
    return o->mounted_ours;
}

bool volume_observation_enforces_quota(const VolumeObservation *o) {
    if (!o || !volume_observation_is_up(o) || !o->mount.options || !o->mount.fstype)
        return false;
    const char *opt = quota_mount_option(o->mount.fstype);
    if (!opt)
        return false;
    size_t n = strlen(opt);
    for (const char *p = o->mount.options; (p = strstr(p, opt)); p += n)
        if ((p == o->mount.options || p[-1] == ',') && (p[n] == ',' || p[n] == 0))
            return true;
    return false;
}

const ProbeResult *volume_observation_fs_probe(const VolumeObservation *o) {
    if (o->fs_probed)
        return &o->fs_probe;
    return o->probed ? &o->probe : NULL;
}

bool observation_remove(Observation *o, const char *name) {
    VolumeObservation *v = observation_find_mut(o, name);
    if (!v)
        return false;
    volume_observation_done(v);
    size_t i = (size_t) (v - o->volumes);
    memmove(o->volumes + i, o->volumes + i + 1, (o->n - i - 1) * sizeof(*v));
    o->n--;
    return true;
}

int observation_put(Observation *o, VolumeObservation *v) {
    VolumeObservation *old = observation_find_mut(o, v->name);
    if (old) {
        volume_observation_done(old);
        *old = *v;
        *v = (VolumeObservation) {};
        return 0;
    }
    VolumeObservation *t = realloc(o->volumes, sizeof(*t) * (o->n + 1));
    if (!t)
        return -ENOMEM;
    o->volumes = t;
    t[o->n++] = *v;
    *v = (VolumeObservation) {};
    return 0;
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

int observe_statvfs(VolumeObservation *o) {
    struct statvfs sv;
    if (!o->mount_path || statvfs(o->mount_path, &sv) < 0)
        return negative_errno();
    o->has_statvfs = true;
    o->fs_size = (uint64_t) sv.f_blocks * sv.f_frsize;
    o->fs_used = (uint64_t) (sv.f_blocks - sv.f_bfree) * sv.f_frsize;
    o->fs_avail = (uint64_t) sv.f_bavail * sv.f_frsize;
    o->fs_inodes = sv.f_files;
    o->fs_inodes_free = sv.f_favail;
    o->fs_read_only = (sv.f_flag & ST_RDONLY) != 0;
    return 0;
}
