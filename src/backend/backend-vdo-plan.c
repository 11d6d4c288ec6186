/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The planner of vdo-xfs: backing file (or the pool's block device) ->
 * loop device with direct I/O -> vdoformat -> dm-vdo target -> XFS ->
 * mount. Pure. Every layer is its own step, so `layoutctl plan` shows
 * what a VDO volume still needs as precisely as a loop volume.
 *
 * Two signatures matter: the VDO super block on the storage (probed on the
 * loop device) and the XFS on the dm node (probed once the target is up).
 * While the target is down the XFS cannot be seen; the DM_CREATE step
 * checks it right after creating the target (a formatted volume must show
 * the recorded UUID) and FORMAT re-probes before mkfs.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "backend-internal.h"
#include "backend-vdo.h"
#include "util.h"

typedef struct VdoPlan {
    PlanBuilder *b;
    const PlanSubject *subj;
    const Pool *pool;
    const VolumeRecord *rec;
    const VolumeObservation *o;
    const FsType *fs;            /* XFS, from the backend's traits */
    char *label;
} VdoPlan;

static const char *storage_of(const VolumeObservation *o) {
    return o->attached ? o->loop.node : o->backing_path;
}

static void emit_attach(VdoPlan *vp) {
    PlanStep *s = plan_builder_emit(vp->b, vp->subj, PLAN_STEP_ATTACH, "attach %s to a loop device %s",
                                    vp->o->backing_path,
                                    vp->pool->direct_io ? "with direct I/O" : "buffered (direct_io: false)");
    if (s) {
        plan_builder_set(vp->b, &s->path, vp->o->backing_path);
        s->direct_io = vp->pool->direct_io;
    }
}

static void emit_vdoformat(VdoPlan *vp) {
    char sz[32];
    PlanStep *s = plan_builder_emit(vp->b, vp->subj, PLAN_STEP_VDO_FORMAT,
                                    "vdoformat %s (logical size %s; blank, created by layoutd)",
                                    vp->o->attached ? vp->o->loop.node : "its loop device",
                                    plan_format_size(sz, vp->pool->vdo.logical_size));
    if (s) {
        plan_builder_set(vp->b, &s->path, vp->o->backing_path);
        s->size = vp->pool->vdo.logical_size;
    }
}

static void emit_dm_create(VdoPlan *vp) {
    PlanStep *s = plan_builder_emit(vp->b, vp->subj, PLAN_STEP_DM_CREATE,
                                    "create dm-vdo target layoutd-%s on %s (deduplication %s, compression %s)",
                                    vp->o->name, vp->o->attached ? vp->o->loop.node : vp->o->backing_path,
                                    vp->pool->vdo.deduplication ? "on" : "off",
                                    vp->pool->vdo.compression ? "on" : "off");
    if (s)
        plan_builder_set(vp->b, &s->path, vp->o->backing_path);
}

static void emit_format(VdoPlan *vp) {
    PlanStep *s = plan_builder_emit(vp->b, vp->subj, PLAN_STEP_FORMAT,
                                    "format /dev/mapper/layoutd-%s as %s (-K: no discard; new UUID, label %s)",
                                    vp->o->name, vp->fs->name, vp->label);
    if (s) {
        plan_builder_set(vp->b, &s->path, vp->o->backing_path);
        plan_builder_set(vp->b, &s->fs_type, vp->fs->name);
    }
}

static void emit_mount(VdoPlan *vp) {
    PlanStep *s = plan_builder_emit(vp->b, vp->subj, PLAN_STEP_MOUNT, "mount /dev/mapper/layoutd-%s (%s) on %s",
                                    vp->o->name, vp->fs->name, vp->o->mount_path);
    if (s) {
        plan_builder_set(vp->b, &s->mount_path, vp->o->mount_path);
        plan_builder_set(vp->b, &s->fs_type, vp->fs->name);
    }
}

/* No storage yet: carve all of it, unless the record says it held data. */
static void plan_missing(VdoPlan *vp) {
    const VolumeObservation *o = vp->o;
    char sz[32];
    if (vp->pool->vdo.device) {
        plan_builder_refuse(vp->b, vp->subj, PLAN_STEP_REFUSE, "device-missing", true,
                            "refuse %s: the pool's block device %s does not exist", o->name, o->backing_path);
        return;
    }
    if (vp->rec && vp->rec->formatted) {
        plan_builder_refuse(vp->b, vp->subj, PLAN_STEP_DRIFT, "backing-deleted", true,
                            "drift %s: the record says %s held a VDO volume with XFS UUID %s but the backing file "
                            "is missing; not re-creating it (`layoutctl repair --forget-missing` forgets it)",
                            o->name, o->backing_path, vp->rec->fs_uuid);
        return;
    }
    PlanStep *s = plan_builder_emit(vp->b, vp->subj, PLAN_STEP_CREATE_FILE, "create sparse backing file %s (%s)",
                                    o->backing_path, plan_format_size(sz, vp->pool->volume_size));
    if (s) {
        plan_builder_set(vp->b, &s->path, o->backing_path);
        s->size = vp->pool->volume_size;
    }
    emit_attach(vp);
    emit_vdoformat(vp);
    emit_dm_create(vp);
    emit_format(vp);
    emit_mount(vp);
    backend_plan_identity(vp->b, vp->subj, vp->rec, o, false);
}

/* The VDO super block on the storage. Sets *need_vdoformat for blank
 * storage this agent created and never formatted. */
static bool plan_storage_identity(VdoPlan *vp, bool *need_vdoformat) {
    const VolumeObservation *o = vp->o;
    const VolumeRecord *rec = vp->rec;
    *need_vdoformat = false;
    if (o->dm_up)
        return true; /* the target is running on it: the kernel vouches for the super block */
    if (!o->probed) {
        plan_builder_refuse(vp->b, vp->subj, PLAN_STEP_REFUSE, "probe-failed", true,
                            "refuse %s: cannot probe %s for signatures: %s", o->name, storage_of(o),
                            strerror(o->probe_error ?: EIO));
        return false;
    }
    bool is_vdo = streq_ptr(o->probe.type, "vdo");
    if (!rec || (!rec->created_file && !rec->formatted)) {
        plan_builder_refuse(vp->b, vp->subj, PLAN_STEP_REFUSE, "not-ours", true,
                            "refuse %s: %s holds %s that layoutd did not create (not in the record); left untouched",
                            o->name, storage_of(o), o->probe.blank ? "nothing" : o->probe.type ?: "a signature");
        return false;
    }
    if (o->probe.blank) {
        if (rec->formatted) {
            plan_builder_refuse(vp->b, vp->subj, PLAN_STEP_REFUSE, "signature-lost", true,
                                "refuse %s: the record says it held VDO with XFS UUID %s but %s is blank now; not "
                                "re-formatting",
                                o->name, rec->fs_uuid, storage_of(o));
            return false;
        }
        *need_vdoformat = true;
        return true;
    }
    if (!is_vdo) {
        plan_builder_refuse(vp->b, vp->subj, PLAN_STEP_REFUSE, "foreign-signature", true,
                            "refuse %s: %s holds %s (UUID %s), not VDO; left untouched", o->name, storage_of(o),
                            o->probe.type ?: "an unknown signature", o->probe.uuid ?: "none");
        return false;
    }
    return true;
}

/* The loop device of a backing file, with direct I/O as the pool asks. */
static void plan_attachment(VdoPlan *vp) {
    const VolumeObservation *o = vp->o;
    if (!o->file_is_regular)
        return; /* the pool's block device is used as it is */
    if (!o->attached) {
        emit_attach(vp);
        return;
    }
    if (!vp->pool->direct_io || o->loop.direct_io)
        return;
    if (o->dm_up) {
        plan_builder_refuse(vp->b, vp->subj, PLAN_STEP_DRIFT, "buffered", false,
                            "drift %s: %s is attached without direct I/O and the dm-vdo target runs on it; "
                            "re-attaching needs a teardown (`layoutctl teardown` then `apply`)",
                            o->name, o->loop.node);
        return;
    }
    PlanStep *s = plan_builder_emit(vp->b, vp->subj, PLAN_STEP_DETACH,
                                    "detach %s from %s: attached without direct I/O, re-attaching with it",
                                    o->backing_path, o->loop.node);
    if (s)
        plan_builder_set(vp->b, &s->path, o->loop.node);
    emit_attach(vp);
}

/* The XFS on the dm node: checked when the target is up; otherwise the
 * DM_CREATE and FORMAT steps check it when it can be seen. */
static bool plan_filesystem(VdoPlan *vp) {
    const VolumeObservation *o = vp->o;
    bool need_format = false;
    if (!o->dm_up) {
        if (!vp->rec->formatted)
            emit_format(vp);
        return true;
    }
    if (backend_plan_check_identity(vp->b, vp->subj, vp->rec, o, &o->fs_probe, o->fs_probed, o->fs_probe_error,
                                    vp->fs->name, vp->rec->fs_uuid, &need_format))
        return false;
    if (need_format)
        emit_format(vp);
    return true;
}

static bool plan_mount(VdoPlan *vp) {
    const VolumeObservation *o = vp->o;
    if (o->loop_mounted_elsewhere && !o->mounted_ours) {
        plan_builder_refuse(vp->b, vp->subj, PLAN_STEP_DRIFT, "mounted-elsewhere", true,
                            "drift %s: %s is mounted by hand on %s, not on %s; not mounting it twice", o->name,
                            o->dm_node ?: "its dm device", o->loop_mount.target, o->mount_path);
        return false;
    }
    if (!o->mounted_ours)
        emit_mount(vp);
    return true;
}

/* Physical growth (a larger backing file) and logical growth (a larger
 * vdo.logical_size) are one GROW step: storage, then the target, then XFS. */
static void plan_vdo_grow(VdoPlan *vp, uint64_t physical, uint64_t logical) {
    const VolumeObservation *o = vp->o;
    char a[32], b[32], c[32], d[32];
    uint64_t have_logical = o->has_vdo_stats && o->vdo.has_message ? o->vdo.logical_blocks * 4096 : 0;
    bool grow_physical = o->file_is_regular && o->file_size < physical;
    bool grow_logical = have_logical > 0 && have_logical < logical;
    if (!grow_physical && !grow_logical)
        return;
    PlanStep *s = plan_builder_emit(vp->b, vp->subj, PLAN_STEP_GROW,
                                    "grow %s online: physical %s -> %s, logical %s -> %s (extend %s, refresh the "
                                    "loop, reload the dm-vdo table, xfs_growfs)",
                                    o->name, plan_format_size(a, o->file_size),
                                    plan_format_size(b, grow_physical ? physical : o->file_size),
                                    plan_format_size(c, have_logical),
                                    plan_format_size(d, grow_logical ? logical : have_logical), o->backing_path);
    if (s) {
        plan_builder_set(vp->b, &s->path, o->backing_path);
        plan_builder_set(vp->b, &s->mount_path, o->mount_path);
        plan_builder_set(vp->b, &s->fs_type, vp->fs->name);
        s->size = grow_physical ? physical : o->file_size;
        s->old_size = o->file_size;
    }
}

void vdo_backend_plan(PlanBuilder *b, const PlanSubject *subj, const Pool *p, const VolumeRecord *rec,
                      const VolumeObservation *o) {
    const BackendTraits *t = backend_traits(p->backend);
    VdoPlan vp = { .b = b, .subj = subj, .pool = p, .rec = rec, .o = o, .fs = t ? t->fs : NULL };
    bool need_vdoformat = false;

    if (!p->has_vdo || !vp.fs) {
        b->error = -EINVAL;
        return;
    }
    if (plan_volume_label(vp.fs->name, o->role, o->index, o->name, &vp.label) < 0) {
        b->error = -ENOMEM;
        return;
    }
    if (backend_plan_refuse_unusable(b, subj, o))
        goto done;
    if (!o->file_exists) {
        plan_missing(&vp);
        goto done;
    }
    if (!o->file_is_regular && !o->file_is_block) {
        plan_builder_refuse(b, subj, PLAN_STEP_REFUSE, "not-regular", true,
                            "refuse %s: %s is neither a regular file nor a block device", o->name, o->backing_path);
        goto done;
    }
    if (!plan_storage_identity(&vp, &need_vdoformat))
        goto done;
    if (o->file_is_regular)
        backend_plan_shrink_note(b, subj, p, o);
    plan_attachment(&vp);
    if (need_vdoformat)
        emit_vdoformat(&vp);
    if (!o->dm_up)
        emit_dm_create(&vp);
    if (!plan_filesystem(&vp))
        goto done;
    if (!plan_mount(&vp))
        goto done;
    backend_plan_mount_flags(b, subj, o);
    backend_plan_identity(b, subj, rec, o, o->mounted_ours);
    if (o->dm_up)
        plan_vdo_grow(&vp, p->volume_size, p->vdo.logical_size);
done:
    free(vp.label);
}

void vdo_backend_plan_grow(PlanBuilder *b, const PlanSubject *subj, const Pool *p, const VolumeRecord *rec,
                           const VolumeObservation *o, uint64_t new_size) {
    const BackendTraits *t = backend_traits(p->backend);
    VdoPlan vp = { .b = b, .subj = subj, .pool = p, .rec = rec, .o = o, .fs = t ? t->fs : NULL };
    if (!vp.fs) {
        b->error = -EINVAL;
        return;
    }
    if (!o->mounted_ours || !o->dm_up) {
        plan_builder_refuse(b, subj, PLAN_STEP_REFUSE, "not-mounted", true,
                            "cannot grow %s: its dm-vdo target is not up and mounted", o->name);
        return;
    }
    if (!o->file_is_regular) {
        plan_builder_refuse(b, subj, PLAN_STEP_REFUSE, "block-device", true,
                            "cannot grow %s: it is on the block device %s, which layoutd does not resize", o->name,
                            o->backing_path);
        return;
    }
    if (new_size <= o->file_size) {
        plan_builder_refuse(b, subj, PLAN_STEP_REFUSE, "shrink", true,
                            "cannot grow %s to %" PRIu64 " bytes: it already has %" PRIu64 " (volumes never shrink)",
                            o->name, new_size, o->file_size);
        return;
    }
    /* Physical space only: the logical size is the layout's (already
     * larger than the physical one, which is the point of VDO). */
    uint64_t logical = p->vdo.logical_size;
    plan_vdo_grow(&vp, new_size, logical);
}

void vdo_backend_plan_teardown(PlanBuilder *b, const PlanSubject *subj, const VolumeRecord *rec,
                               const VolumeObservation *o, const TeardownOptions *opts) {
    if (o && o->loop_mounted_elsewhere && !o->mounted_ours) {
        plan_builder_refuse(b, subj, PLAN_STEP_REFUSE, "mounted-elsewhere", true,
                            "refuse %s: %s is mounted on %s, which layoutd did not make; unmount it first",
                            subj->volume, o->dm_node ?: "its dm device", o->loop_mount.target);
        return;
    }
    if (o && o->mounted && !o->mounted_ours) {
        plan_builder_refuse(b, subj, PLAN_STEP_REFUSE, "mount-path-busy", true,
                            "refuse %s: %s is a mount point of another device, not /dev/mapper/%s: left as is",
                            subj->volume, o->mount_path, o->dm_name ?: "?");
        return;
    }
    if (o && o->mounted_ours) {
        PlanStep *st = plan_builder_emit(b, subj, PLAN_STEP_UNMOUNT, "unmount %s", o->mount_path);
        if (st)
            plan_builder_set(b, &st->mount_path, o->mount_path);
    }
    /* vdo_volume_down() removes the target and detaches the loop in one
     * step, and is a no-op for what is gone already. */
    PlanStep *st = plan_builder_emit(b, subj, PLAN_STEP_DM_REMOVE, "remove dm-vdo layoutd-%s, detach %s",
                                     subj->volume, rec && rec->backing_path ? rec->backing_path : "-");
    if (st && rec)
        plan_builder_set(b, &st->path, rec->backing_path);
    if (opts->destroy_data)
        backend_plan_teardown_destroy(b, subj, rec, o, o ? o->mount_path : NULL, false);
}
