/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vdo-xfs: backing file (or the pool's block device) -> loop device ->
 * vdoformat -> dm-vdo target /dev/mapper/layoutd-<volume> -> XFS (-K) ->
 * mount (never with `discard`: dm-vdo/vdo#57; the agent runs fstrim).
 * src/vdo does the device-mapper work; this file turns it into steps,
 * observes the target (status and stats: one ioctl and one message, no
 * I/O on the data path) and reports it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "backend-internal.h"
#include "backend-vdo.h"
#include "util.h"
#include "vdo-dm.h"
#include "vdo-volume.h"

static int vdo_observe(const Layout *l, const VolumeSpec *spec, VolumeObservation *o) {
    int r = backend_observe_backing(spec, l, o);
    if (r < 0)
        return r;
    r = backend_observe_loop(o);
    if (r < 0)
        return r;
    backend_observe_probe(o, o->attached ? o->loop.node : o->file_is_block ? o->backing_path : NULL);
    if (vdo_volume_dm_name(spec->name, &o->dm_name) < 0)
        return -ENOMEM;
    if (vdo_volume_dm_node(spec->name, &o->dm_node, &o->dm_devno) < 0)
        return 0;
    o->dm_up = true;
    r = probe_path(o->dm_node, &o->fs_probe);
    if (r >= 0)
        o->fs_probed = true;
    else
        o->fs_probe_error = -r;
    if (o->mounted && o->mount.devno == o->dm_devno)
        o->mounted_ours = true;
    else if (mount_find_by_devno(o->dm_devno, &o->loop_mount) >= 0)
        o->loop_mounted_elsewhere = true;
    _cleanup_free_ char *err = NULL;
    r = vdo_volume_stats(spec->name, &o->vdo, &err);
    if (r >= 0)
        o->has_vdo_stats = true;
    else
        o->vdo_error = err ? TAKE_PTR(err) : strdup(strerror(-r));
    return 0;
}

/* The device the VDO target sits on: the loop device of the backing file,
 * or the pool's block device. */
static int storage_node(VolumeSetup *s, const char **ret, ApplyStepResult *sr) {
    VolumeRecord *rec = volume_setup_record(s);
    const char *backing = rec && rec->backing_path ? rec->backing_path : s->observed ? s->observed->backing_path : NULL;
    if (s->pool && s->pool->vdo.device) {
        *ret = s->pool->vdo.device;
        return 0;
    }
    int r = volume_setup_find_loop(s, backing);
    if (r < 0) {
        apply_step_result_message(sr, "no loop device for %s: %s", backing ?: s->name, strerror(-r));
        return r;
    }
    *ret = s->loop_node;
    return 0;
}

static int need_dm(VolumeSetup *s, ApplyStepResult *sr) {
    if (s->dm_node)
        return 0;
    int r = vdo_volume_dm_node(s->name, &s->dm_node, &s->dm_devno);
    if (r < 0)
        apply_step_result_message(sr, "the dm-vdo target of %s is not up: %s", s->name, strerror(-r));
    return r;
}

static int step_vdoformat(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr) {
    VolumeRecord *rec = volume_setup_record(s);
    const char *node;
    _cleanup_free_ char *err = NULL;
    ProbeResult pr = {};
    int r;
    /* The same rule as mkfs: only blank storage layoutd created. */
    if (!rec || !rec->created_file || rec->formatted) {
        apply_step_result_message(sr, "refusing to vdoformat %s: the record does not say layoutd created it",
                                  s->name);
        return -EPERM;
    }
    if ((r = storage_node(s, &node, sr)) < 0)
        return r;
    r = probe_path(node, &pr);
    if (r < 0) {
        apply_step_result_message(sr, "cannot probe %s: %s", node, strerror(-r));
        return r;
    }
    bool blank = pr.blank, is_vdo = streq_ptr(pr.type, "vdo");
    probe_result_done(&pr);
    if (is_vdo) {
        apply_step_result_message(sr, "%s holds a VDO super block already (an earlier run formatted it)", node);
        return 0;
    }
    if (!blank) {
        apply_step_result_message(sr, "refusing to vdoformat %s: it is not blank", node);
        return -EEXIST;
    }
    r = vdo_volume_format_storage(s->pool, node, &err);
    if (r < 0) {
        apply_step_result_message(sr, "%s", err ?: strerror(-r));
        return r;
    }
    sr->changed = true;
    return 0;
}

static int step_dm_create(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr) {
    VolumeRecord *rec = volume_setup_record(s);
    const char *node;
    _cleanup_free_ char *err = NULL;
    VdoVolumeInfo info = {};
    int r;
    if ((r = storage_node(s, &node, sr)) < 0)
        return r;
    r = vdo_volume_create(s->pool, s->name, node, &info, &err);
    if (r < 0) {
        apply_step_result_message(sr, "%s", err ?: strerror(-r));
        return r;
    }
    if (info.created && !(s->undo_dm = strdup(info.dm_name))) {
        vdo_volume_info_done(&info);
        return -ENOMEM;
    }
    free(s->dm_node);
    s->dm_node = TAKE_PTR(info.dm_node);
    s->dm_devno = info.devno;
    sr->changed = info.created;
    apply_step_result_message(sr, "%s on %s%s", s->dm_node, node, info.created ? "" : " (already up)");
    _cleanup_free_ char *dm_name = TAKE_PTR(info.dm_name);
    vdo_volume_info_done(&info);

    /* A formatted volume must show the filesystem we made, now that it
     * can be seen: the target could be up on someone else's VDO. */
    if (rec && rec->formatted) {
        ProbeResult pr = {};
        r = probe_path(s->dm_node, &pr);
        bool ours = r >= 0 && streq_ptr(pr.type, rec->fs_type) && pr.uuid && rec->fs_uuid &&
                    strcasecmp(pr.uuid, rec->fs_uuid) == 0;
        if (!ours) {
            apply_step_result_message(sr, "%s holds %s %s, not the filesystem this agent made (XFS UUID %s): refusing it",
                                      s->dm_node, pr.type ?: "no known signature", pr.uuid ?: "", rec->fs_uuid);
            probe_result_done(&pr);
            return -EEXIST;
        }
        probe_result_done(&pr);
    }
    if (rec && !rec->dm_name) {
        rec->dm_name = TAKE_PTR(dm_name);
        r = volume_setup_save(s, sr);
        if (r < 0)
            return r;
    }
    return 0;
}

static int step_mount(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr) {
    const char *why = NULL;
    int r;
    if (s->pool && vdo_mount_options_check(s->pool->mount_options, &why) < 0) {
        apply_step_result_message(sr, "refusing to mount %s: %s", s->name, why);
        return -EINVAL;
    }
    if ((r = need_dm(s, sr)) < 0)
        return r;
    return backend_step_mount(s, p, s->dm_node, s->dm_devno, sr);
}

static int step_grow(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr) {
    VolumeRecord *rec = volume_setup_record(s);
    _cleanup_free_ char *err = NULL;
    uint64_t size = p->old_size;
    bool changed = false;
    int r;
    if ((r = need_dm(s, sr)) < 0)
        return r;
    if (p->size > p->old_size) {
        r = backend_grow_storage(s, p, &size, sr);
        if (r < 0)
            return r;
    }
    r = vdo_volume_grow(s->pool, s->name, rec ? rec->backing_path : p->path, s->pool->vdo.logical_size, &changed,
                        &err);
    if (r < 0) {
        apply_step_result_message(sr, "cannot grow the dm-vdo target: %s", err ?: strerror(-r));
        return r;
    }
    return backend_grow_fs(s, p, s->dm_node, size, sr);
}

static int vdo_apply_step(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr) {
    int r;
    /* Without dm-vdo nothing below can work, and nothing should be made
     * (a backing file, a loop device) for a volume that cannot come up. */
    if (!s->checked && p->kind != PLAN_STEP_MOUNT && p->kind != PLAN_STEP_ADOPT && p->kind != PLAN_STEP_IDENTIFY) {
        _cleanup_free_ char *why = NULL;
        r = vdo_dm_check_support(NULL, &why);
        if (r < 0) {
            apply_step_result_message(sr, "%s", why ?: VDO_DM_UNSUPPORTED_MESSAGE);
            return r;
        }
        s->checked = true;
    }
    switch (p->kind) {
    case PLAN_STEP_CREATE_FILE:
        return backend_step_create_file(s, p, sr);
    case PLAN_STEP_DETACH:
        return backend_step_detach(s, p, sr);
    case PLAN_STEP_ATTACH:
        return backend_step_attach(s, p, sr);
    case PLAN_STEP_VDO_FORMAT:
        return step_vdoformat(s, p, sr);
    case PLAN_STEP_DM_CREATE:
        return step_dm_create(s, p, sr);
    case PLAN_STEP_FORMAT:
        if ((r = need_dm(s, sr)) < 0)
            return r;
        /* mkfs.xfs -K: the whole device is unmapped on a fresh VDO, a
         * discard at mkfs time would only cost time. */
        return backend_step_format(s, p, s->dm_node, false, sr);
    case PLAN_STEP_ADOPT:
        return backend_step_adopt(s, p, sr);
    case PLAN_STEP_MOUNT:
        return step_mount(s, p, sr);
    case PLAN_STEP_GROW:
        return step_grow(s, p, sr);
    case PLAN_STEP_IDENTIFY:
        return backend_step_identify(s, p, sr);
    default:
        apply_step_result_message(sr, "%s is not a step of a vdo-xfs volume", plan_step_kind_to_string(p->kind));
        return -EINVAL;
    }
}

/* Only what this run brought up goes down again: the mount (common), the
 * dm target before the loop device it sits on, and for a volume that was
 * never formatted everything layoutd made for it. */
static void vdo_rollback(VolumeSetup *s) {
    VolumeRecord *rec = volume_setup_record(s);
    bool unformatted = !s->undo_file && rec && rec->created_file && !rec->formatted && rec->backing_path &&
                       !(s->pool && s->pool->vdo.device);
    if (unformatted && !s->undo_dm && vdo_volume_dm_node(s->name, NULL, NULL) >= 0)
        (void) vdo_volume_dm_name(s->name, &s->undo_dm);
    if (s->undo_mount) {
        (void) mount_unmount(s->undo_mount, false, NULL);
        s->undo_mount = mfree(s->undo_mount);
    }
    if (s->undo_dm) {
        _cleanup_free_ char *err = NULL;
        int r = vdo_dm_remove(s->undo_dm, &err);
        if (r < 0 && r != -ENXIO)
            apply_volume_result_note(s->result, "rollback: removing dm target %s failed: %s", s->undo_dm,
                                     err ?: strerror(-r));
        s->result->rolled_back = true;
    }
    if (unformatted) {
        s->undo_file = strdup(rec->backing_path);
        if (!s->undo_loop && volume_setup_find_loop(s, rec->backing_path) >= 0)
            s->undo_loop = strdup(s->loop_node);
        s->undo_record = true;
    }
    volume_setup_rollback_common(s);
}

static void vdo_teardown(VolumeSetup *s, const VolumeObservation *o, const TeardownOptions *opts) {
    VolumeRecord *rec = volume_setup_record(s);
    if (o && o->loop_mounted_elsewhere && !o->mounted_ours) {
        apply_volume_result_fail(s->result, APPLY_OUTCOME_REFUSED, -EBUSY,
                                 "%s is mounted on %s, which layoutd did not make; unmount it first",
                                 o->dm_node ?: "its dm device", o->loop_mount.target);
        return;
    }
    if (o && o->mounted && !o->mounted_ours) {
        apply_volume_result_fail(s->result, APPLY_OUTCOME_REFUSED, -EBUSY,
                                 "%s is a mount point of another device, not /dev/mapper/%s: left as is",
                                 o->mount_path, o->dm_name ?: "?");
        return;
    }
    if (o && o->mounted_ours && backend_teardown_unmount(s, o->mount_path, opts) < 0)
        return;
    _cleanup_free_ char *desc = NULL, *err = NULL;
    const char *backing = rec ? rec->backing_path : NULL;
    if (asprintf(&desc, "remove dm-vdo layoutd-%s, detach %s", s->name, backing ?: "-") < 0)
        return;
    ApplyStepResult *sr = apply_volume_result_add_step(s->result, PLAN_STEP_DM_REMOVE, desc);
    if (!sr)
        return;
    int r = vdo_volume_down(s->name, backing, &err);
    if (r < 0) {
        sr->error = r;
        apply_step_result_message(sr, "cannot take %s down: %s", s->name, err ?: strerror(-r));
        apply_volume_result_fail(s->result, APPLY_OUTCOME_FAILED, r, "%s", sr->message);
        return;
    }
    sr->changed = o && (o->dm_up || o->attached);
}

static void vdo_destroy(VolumeSetup *s, const VolumeObservation *o) {
    (void) backend_teardown_destroy(s, o, false);
}

static const char *vdo_problem(const VdoStats *s) {
    if (s->mode == VDO_MODE_READ_ONLY)
        return "VDO is in read-only mode after an error (data loss is possible); no workspace is placed on it; "
               "take it offline and run vdoforcerebuild (docs/vdo.md)";
    if (s->index_state == VDO_INDEX_ERROR)
        return "the VDO deduplication index is in error: no deduplication until it is rebuilt";
    if (s->mode == VDO_MODE_RECOVERING || s->in_recovery)
        return "VDO is recovering after an unclean shutdown";
    return NULL;
}

static uint64_t block_size(const VdoStats *s) {
    return s->block_size ? s->block_size : 4096;
}

static void vdo_to_json(const Pool *p, const VolumeObservation *v, json_object *o) {
    json_object *j = json_object_new_object();
    if (!j)
        return;
    if (v->dm_name)
        json_object_object_add(j, "dm_name", json_object_new_string(v->dm_name));
    if (v->dm_up && v->dm_node)
        json_object_object_add(j, "dm_node", json_object_new_string(v->dm_node));
    if (!v->has_vdo_stats) {
        json_object_object_add(j, "error", json_object_new_string(!v->dm_up ? "the dm-vdo device is not up"
                                                                  : v->vdo_error ?: "no statistics"));
        json_object_object_add(o, "vdo", j);
        return;
    }
    const VdoStats *s = &v->vdo;
    uint64_t bs = block_size(s);
    json_object_object_add(j, "mode", json_object_new_string(vdo_mode_to_string(s->mode) ?: "unknown"));
    json_object_object_add(j, "recovery", json_object_new_boolean(s->in_recovery));
    if (s->in_recovery)
        json_object_object_add(j, "recovery_percent", json_object_new_int((int) s->recovery_percentage));
    json_object_object_add(j, "index_state",
                           json_object_new_string(vdo_index_state_to_string(s->index_state) ?: "unknown"));
    json_object_object_add(j, "compression_state", json_object_new_string(s->compression_online ? "online" : "offline"));
    json_object_object_add(j, "physical_used_bytes", json_object_new_uint64(s->physical_used * bs));
    json_object_object_add(j, "physical_total_bytes", json_object_new_uint64(s->physical_total * bs));
    if (s->has_message) {
        json_object_object_add(j, "logical_used_bytes", json_object_new_uint64(s->logical_blocks_used * bs));
        json_object_object_add(j, "logical_size_bytes", json_object_new_uint64(s->logical_blocks * bs));
        json_object_object_add(j, "data_used_bytes", json_object_new_uint64(s->data_blocks_used * bs));
        json_object_object_add(j, "overhead_used_bytes", json_object_new_uint64(s->overhead_blocks_used * bs));
        json_object_object_add(j, "no_space_errors", json_object_new_uint64(s->no_space_errors));
        json_object_object_add(j, "read_only_errors", json_object_new_uint64(s->read_only_errors));
    } else
        json_object_object_add(j, "logical_used_bytes", NULL);
    json_object_object_add(j, "saving_percent", json_object_new_int(s->saving_percent));
    json_object_object_add(j, "degraded", json_object_new_boolean(s->degraded));
    const char *problem = vdo_problem(s);
    json_object_object_add(j, "problem", problem ? json_object_new_string(problem) : NULL);
    json_object_object_add(o, "vdo", j);
}

static void vdo_metrics(const Observation *obs, MetricsWriter *w) {
    size_t n = 0;
    for (size_t i = 0; i < obs->n; i++)
        if (obs->volumes[i].backend == BACKEND_VDO_XFS && obs->volumes[i].has_vdo_stats)
            n++;
    if (n == 0)
        return;

#define VDO_FAMILY(family, type, help, expr)                                                   \
    do {                                                                                     \
        (void) metrics_writer_family(w, family, type, help);                                \
        for (size_t i = 0; i < obs->n; i++) {                                                \
            const VolumeObservation *v = &obs->volumes[i];                                   \
            const VdoStats *s = &v->vdo;                                                     \
            double value;                                                                    \
            if (v->backend != BACKEND_VDO_XFS || !v->has_vdo_stats || !(expr))               \
                continue;                                                                    \
            (void) metrics_writer_sample(w, (const char *const[]) { "volume", v->name, NULL }, value); \
        }                                                                                    \
    } while (0)

    VDO_FAMILY("layoutd_vdo_physical_used_bytes", METRIC_GAUGE,
               "Physical bytes in use on the VDO volume (data and VDO metadata)",
               (value = (double) (s->physical_used * block_size(s)), true));
    VDO_FAMILY("layoutd_vdo_physical_total_bytes", METRIC_GAUGE, "Physical size of the VDO volume",
               (value = (double) (s->physical_total * block_size(s)), true));
    VDO_FAMILY("layoutd_vdo_logical_used_bytes", METRIC_GAUGE, "Logical bytes mapped on the VDO volume",
               s->has_message && (value = (double) (s->logical_blocks_used * block_size(s)), true));
    VDO_FAMILY("layoutd_vdo_saving_ratio", METRIC_GAUGE,
               "Space saved by deduplication and compression: (logical used - data used) / logical used",
               s->has_message && (value = s->logical_blocks_used == 0 || s->data_blocks_used >= s->logical_blocks_used
                                                  ? 0.0
                                                  : (double) (s->logical_blocks_used - s->data_blocks_used) /
                                                            (double) s->logical_blocks_used,
                                  true));
    VDO_FAMILY("layoutd_vdo_degraded", METRIC_GAUGE, "1 when the VDO volume is read-only or its index is in error",
               (value = s->degraded, true));
#undef VDO_FAMILY
    (void) metrics_writer_family(w, "layoutd_vdo_mode", METRIC_GAUGE,
                                 "1 for the VDO volume's current operating mode (normal, recovering, read-only)");
    for (size_t i = 0; i < obs->n; i++) {
        const VolumeObservation *v = &obs->volumes[i];
        if (v->backend != BACKEND_VDO_XFS || !v->has_vdo_stats)
            continue;
        for (VdoMode mode = 0; mode < _VDO_MODE_MAX; mode++)
            (void) metrics_writer_sample(w, (const char *const[]) { "volume", v->name, "mode", vdo_mode_to_string(mode), NULL },
                                         v->vdo.mode == mode);
    }
}

/* The periodic fstrim: online discard stalls all I/O of XFS on VDO during
 * deletes (dm-vdo/vdo#57, kvdo#16), so the maintainers' advice is a
 * periodic fstrim; it is how freed blocks go back to VDO. The layout
 * refuses mount_options: discard for the same reason. */
static int vdo_maintenance(const Pool *p, const VolumeObservation *o, VolumeMaintenance *ret) {
    *ret = (VolumeMaintenance) {};
    if (!p->has_vdo || p->vdo.fstrim_interval == 0)
        return 0;
    ret->name = "fstrim";
    ret->interval = p->vdo.fstrim_interval;
    ret->package = "util-linux";
    if (!o || !o->dm_up || !o->mounted_ours)
        return 0;
    return vdo_fstrim_argv(o->mount_path, &ret->argv);
}

const VolumeBackend vdo_xfs_backend = {
    .observe = vdo_observe,
    .plan = vdo_backend_plan,
    .plan_grow = vdo_backend_plan_grow,
    .apply_step = vdo_apply_step,
    .rollback = vdo_rollback,
    .plan_teardown = vdo_backend_plan_teardown,
    .teardown = vdo_teardown,
    .destroy = vdo_destroy,
    .to_json = vdo_to_json,
    .maintenance = vdo_maintenance,
    .metrics = vdo_metrics,
};
