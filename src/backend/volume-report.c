/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>

#include "json-util.h"
#include "backend.h"
#include "util.h"
#include "volume-report.h"

#define J_ADD(o, k, v) json_object_object_add((o), (k), (v))

int volume_report_json(const Layout *l, const VolumeObservation *v, const VolumeRecord *rec, json_object **ret) {
    json_object *o = json_object_new_object();
    if (!o)
        return -ENOMEM;
    const Pool *pool = layout_pool(l, v->role);
    const BackendTraits *traits = backend_traits(v->backend);
    const ProbeResult *fs = volume_observation_fs_probe(v);
    bool up = volume_observation_is_up(v);

    J_ADD(o, "name", json_string_or_null(v->name));
    J_ADD(o, "role", json_string_or_null(pool_role_to_string(v->role)));
    J_ADD(o, "backend", json_string_or_null(backend_to_string(v->backend)));
    J_ADD(o, "declared", json_object_new_boolean(v->declared));
    J_ADD(o, "device", v->attached ? json_string_or_null(v->loop.node) : NULL);
    /* Read back from the kernel (sysfs loop/dio), never from the layout. */
    J_ADD(o, "direct_io", v->attached ? json_object_new_boolean(v->loop.direct_io) : NULL);
    J_ADD(o, "direct_io_requested", v->declared && traits && traits->uses_loop && pool
                                        ? json_object_new_boolean(pool->direct_io)
                                        : NULL);
    J_ADD(o, "logical_block_size", v->attached ? json_object_new_int64(v->loop.logical_block_size) : NULL);
    J_ADD(o, "fs_type", fs ? json_string_or_null(fs->type) : rec ? json_string_or_null(rec->fs_type) : NULL);
    J_ADD(o, "uuid", fs ? json_string_or_null(fs->uuid) : rec ? json_string_or_null(rec->fs_uuid) : NULL);
    J_ADD(o, "label", fs ? json_string_or_null(fs->label) : NULL);
    J_ADD(o, "mountpoint", json_string_or_null(v->mount_path));
    J_ADD(o, "mounted", json_object_new_boolean(up));
    J_ADD(o, "read_only", v->has_statvfs ? json_object_new_boolean(v->fs_read_only) : NULL);
    /* Writes fail although the mount is rw: the kernel's word for it. */
    J_ADD(o, "fs_state", !up ? NULL
                         : json_string_or_null(v->fs_shutdown ? "shutdown" : v->fs_emergency_ro ? "emergency_ro"
                                                            : v->fs_read_only ? "read-only" : "ok"));
    J_ADD(o, "backing_file", json_string_or_null(v->backing_path));
    if (v->backing_path && v->file_exists) {
        J_ADD(o, "backing_size_bytes", json_object_new_uint64(v->file_size));
        J_ADD(o, "backing_allocated_bytes", json_object_new_uint64(v->file_allocated));
    }
    if (v->has_statvfs) {
        J_ADD(o, "size_bytes", json_object_new_uint64(v->fs_size));
        J_ADD(o, "used_bytes", json_object_new_uint64(v->fs_used));
        J_ADD(o, "free_bytes", json_object_new_uint64(v->fs_avail));
        J_ADD(o, "inodes", json_object_new_uint64(v->fs_inodes));
        J_ADD(o, "free_inodes", json_object_new_uint64(v->fs_inodes_free));
    }
    if (v->has_fs_errors)
        J_ADD(o, "fs_errors", json_object_new_uint64(v->fs_errors));
    if (v->has_bdi) {
        json_object *b = json_object_new_object();
        J_ADD(b, "max_ratio", json_object_new_int(v->bdi.max_ratio));
        J_ADD(b, "max_bytes", v->bdi.has_max_bytes ? json_object_new_uint64(v->bdi.max_bytes) : NULL);
        J_ADD(b, "strict_limit", v->bdi.has_strict_limit ? json_object_new_boolean(v->bdi.strict_limit) : NULL);
        J_ADD(o, "writeback", b);
    }
    if (v->has_io) {
        json_object *s = json_object_new_object();
        J_ADD(s, "read_ios", json_object_new_uint64(v->io.read_ios));
        J_ADD(s, "read_bytes", json_object_new_uint64(v->io.read_sectors * 512));
        J_ADD(s, "write_ios", json_object_new_uint64(v->io.write_ios));
        J_ADD(s, "write_bytes", json_object_new_uint64(v->io.write_sectors * 512));
        J_ADD(s, "in_flight", json_object_new_uint64(v->io.in_flight));
        J_ADD(s, "io_ticks_ms", json_object_new_uint64(v->io.io_ticks_ms));
        J_ADD(o, "io", s);
    }
    const VolumeBackend *b = volume_backend_get(v->backend);
    if (b && b->to_json)
        b->to_json(pool, v, o);
    *ret = o;
    return 0;
}

void volume_report_metrics(const Observation *obs, MetricsWriter *w) {
#define VOLUME_FAMILY(family, type, help, expr)                                                   \
    do {                                                                                        \
        (void) metrics_writer_family(w, family, type, help);                                   \
        for (size_t i = 0; i < obs->n; i++) {                                                   \
            const VolumeObservation *v = &obs->volumes[i];                                      \
            const char *const labels[] = { "volume", v->name, "pool", pool_role_to_string(v->role), \
                                           "backend", backend_to_string(v->backend), NULL };    \
            double value;                                                                       \
            if (!(expr))                                                                        \
                continue;                                                                       \
            (void) metrics_writer_sample(w, labels, value);                                     \
        }                                                                                       \
    } while (0)

    VOLUME_FAMILY("layoutd_volume_up", METRIC_GAUGE, "1 when the volume is mounted and in service",
                  (value = volume_observation_is_up(v), true));
    VOLUME_FAMILY("layoutd_volume_direct_io", METRIC_GAUGE,
                  "1 when the kernel reports the loop device in direct-I/O mode",
                  v->attached && (value = v->loop.direct_io, true));
    VOLUME_FAMILY("layoutd_volume_size_bytes", METRIC_GAUGE, "Filesystem size",
                  v->has_statvfs && (value = (double) v->fs_size, true));
    VOLUME_FAMILY("layoutd_volume_free_bytes", METRIC_GAUGE, "Filesystem bytes available",
                  v->has_statvfs && (value = (double) v->fs_avail, true));
    VOLUME_FAMILY("layoutd_volume_inodes", METRIC_GAUGE, "Filesystem inodes",
                  v->has_statvfs && (value = (double) v->fs_inodes, true));
    VOLUME_FAMILY("layoutd_volume_free_inodes", METRIC_GAUGE, "Filesystem inodes free",
                  v->has_statvfs && (value = (double) v->fs_inodes_free, true));
    VOLUME_FAMILY("layoutd_volume_read_only", METRIC_GAUGE, "1 when the volume's filesystem is read-only",
                  v->has_statvfs && (value = v->fs_read_only, true));
    VOLUME_FAMILY("layoutd_volume_used_bytes", METRIC_GAUGE, "Filesystem bytes used",
                  v->has_statvfs && (value = (double) v->fs_used, true));
    VOLUME_FAMILY("layoutd_volume_fs_failed", METRIC_GAUGE,
                  "1 when the filesystem stopped taking writes while mounted rw (emergency_ro, shutdown)",
                  volume_observation_is_up(v) && (value = v->fs_emergency_ro || v->fs_shutdown, true));
    VOLUME_FAMILY("layoutd_volume_fs_errors", METRIC_GAUGE, "Errors the filesystem recorded (ext4 errors_count, btrfs device stats)",
                  v->has_fs_errors && (value = (double) v->fs_errors, true));
    VOLUME_FAMILY("layoutd_volume_backing_size_bytes", METRIC_GAUGE, "Apparent size of the backing file",
                  v->backing_path && v->file_exists && (value = (double) v->file_size, true));
    VOLUME_FAMILY("layoutd_volume_backing_allocated_bytes", METRIC_GAUGE,
                  "Bytes allocated to the sparse backing file",
                  v->backing_path && v->file_exists && (value = (double) v->file_allocated, true));
    VOLUME_FAMILY("layoutd_volume_read_bytes_total", METRIC_COUNTER, "Bytes read from the volume's block device",
                  v->has_io && (value = (double) v->io.read_sectors * 512, true));
    VOLUME_FAMILY("layoutd_volume_written_bytes_total", METRIC_COUNTER, "Bytes written to the volume's block device",
                  v->has_io && (value = (double) v->io.write_sectors * 512, true));
    VOLUME_FAMILY("layoutd_volume_writeback_max_bytes", METRIC_GAUGE, "bdi max_bytes of the volume's loop device",
                  v->has_bdi && v->bdi.has_max_bytes && (value = (double) v->bdi.max_bytes, true));
#undef VOLUME_FAMILY

    /* Once per table: the loop backends share one. */
    for (Backend b = 0; b < _BACKEND_MAX; b++) {
        const VolumeBackend *vb = volume_backends[b];
        bool seen = false;
        for (Backend e = 0; e < b; e++)
            seen = seen || volume_backends[e] == vb;
        if (vb && vb->metrics && !seen)
            vb->metrics(obs, w);
    }
}
