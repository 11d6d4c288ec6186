/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The planner of the loop backends (loop-ext4, loop-xfs, loop-btrfs):
 * backing file -> loop device with direct I/O -> the filesystem of the
 * backend's traits (its FsType row) -> mount, grown online, never shrunk.
 * Pure.
 *
 * One function per concern, in the order a volume is brought up; each
 * returns false when the volume is left alone from there on (a refusal or
 * drift was emitted). tests/plan/ has one case per refusal and drift.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "backend-internal.h"
#include "backend-loop.h"
#include "util.h"

typedef struct LoopPlan {
    PlanBuilder *b;
    const PlanSubject *subj;
    const Pool *pool;
    const VolumeRecord *rec;
    const VolumeObservation *o;
    const FsType *fs;            /* the backend's filesystem */
    char *label;
} LoopPlan;

static void emit_attach(LoopPlan *lp, bool direct_io) {
    PlanStep *s = plan_builder_emit(lp->b, lp->subj, PLAN_STEP_ATTACH, "attach %s to a loop device %s",
                                    lp->o->backing_path,
                                    direct_io ? "with direct I/O" : "buffered (direct_io: false)");
    if (s) {
        plan_builder_set(lp->b, &s->path, lp->o->backing_path);
        s->direct_io = direct_io;
    }
}

static void emit_format(LoopPlan *lp, const char *why) {
    PlanStep *s = plan_builder_emit(lp->b, lp->subj, PLAN_STEP_FORMAT, "format %s as %s (%snew UUID, label %s)",
                                    lp->o->name, lp->fs->name, why, lp->label);
    if (s) {
        plan_builder_set(lp->b, &s->path, lp->o->backing_path);
        plan_builder_set(lp->b, &s->fs_type, lp->fs->name);
    }
}

static void emit_mount(LoopPlan *lp) {
    PlanStep *s = plan_builder_emit(lp->b, lp->subj, PLAN_STEP_MOUNT, "mount %s (%s) on %s", lp->o->name,
                                    lp->fs->name, lp->o->mount_path);
    if (s) {
        plan_builder_set(lp->b, &s->mount_path, lp->o->mount_path);
        plan_builder_set(lp->b, &s->fs_type, lp->fs->name);
    }
}

/* No backing file: carve it, unless the record says it held a filesystem
 * (re-creating it would hide that its data is gone). Always the end. */
static void plan_missing_file(LoopPlan *lp) {
    const VolumeObservation *o = lp->o;
    char sz[32];
    if (lp->rec && lp->rec->formatted) {
        plan_builder_refuse(lp->b, lp->subj, PLAN_STEP_DRIFT, "backing-deleted", true,
                            "drift %s: the record says %s was formatted (%s UUID %s) but the backing file is "
                            "missing; not re-creating it (`layoutctl repair --forget-missing` forgets it)",
                            o->name, o->backing_path, lp->rec->fs_type, lp->rec->fs_uuid);
        return;
    }
    /* Never formatted (or never made): nothing can be lost. */
    PlanStep *s = plan_builder_emit(lp->b, lp->subj, PLAN_STEP_CREATE_FILE, "create %s backing file %s (%s)",
                                    lp->pool->preallocate ? "preallocated" : "sparse", o->backing_path,
                                    plan_format_size(sz, lp->pool->volume_size));
    if (s) {
        plan_builder_set(lp->b, &s->path, o->backing_path);
        s->size = lp->pool->volume_size;
    }
    emit_attach(lp, lp->pool->direct_io);
    emit_format(lp, "");
    emit_mount(lp);
    backend_plan_identity(lp->b, lp->subj, lp->rec, o, false);
    backend_plan_limits(lp->b, lp->subj, lp->pool, o);
}

/* The loop device, with direct I/O as the pool asks. A buffered device can
 * be re-attached only while nothing has it mounted. */
static void plan_attachment(LoopPlan *lp) {
    const VolumeObservation *o = lp->o;
    if (!o->attached) {
        emit_attach(lp, lp->pool->direct_io);
        return;
    }
    if (!lp->pool->direct_io || o->loop.direct_io)
        return;
    bool mounted_elsewhere = o->loop_mounted_elsewhere && !o->mounted_ours;
    if (o->mounted_ours || mounted_elsewhere) {
        plan_builder_refuse(lp->b, lp->subj, PLAN_STEP_DRIFT, "buffered", false,
                            "drift %s: %s is attached without direct I/O and mounted; re-attaching needs an unmount "
                            "(`layoutctl teardown` then `apply`)",
                            o->name, o->loop.node);
        return;
    }
    PlanStep *s = plan_builder_emit(lp->b, lp->subj, PLAN_STEP_DETACH,
                                    "detach %s from %s: attached without direct I/O, re-attaching with it",
                                    o->backing_path, o->loop.node);
    if (s)
        plan_builder_set(lp->b, &s->path, o->loop.node);
    emit_attach(lp, true);
}

/* The mount at the volume's own path; a hand-made mount elsewhere is drift
 * (never mounted twice by apply; `repair` may). */
static bool plan_mount(LoopPlan *lp) {
    const VolumeObservation *o = lp->o;
    if (o->loop_mounted_elsewhere && !o->mounted_ours) {
        plan_builder_refuse(lp->b, lp->subj, PLAN_STEP_DRIFT, "mounted-elsewhere", true,
                            "drift %s: %s is mounted by hand on %s, not on %s; not mounting it twice", o->name,
                            o->loop.node, o->loop_mount.target, o->mount_path);
        return false;
    }
    if (!o->mounted_ours)
        emit_mount(lp);
    return true;
}

void loop_backend_plan(PlanBuilder *b, const PlanSubject *subj, const Pool *p, const VolumeRecord *rec,
                       const VolumeObservation *o) {
    const BackendTraits *t = backend_traits(p->backend);
    LoopPlan lp = { .b = b, .subj = subj, .pool = p, .rec = rec, .o = o, .fs = t ? t->fs : NULL };
    bool need_format = false;

    if (!lp.fs || plan_volume_label(lp.fs->name, o->role, o->index, o->name, &lp.label) < 0) {
        b->error = lp.fs ? -ENOMEM : -EINVAL;
        return;
    }
    if (backend_plan_refuse_unusable(b, subj, o))
        goto done;
    if (!o->file_exists) {
        plan_missing_file(&lp);
        goto done;
    }
    if (!o->file_is_regular) {
        plan_builder_refuse(b, subj, PLAN_STEP_REFUSE, "not-regular", true, "refuse %s: %s is not a regular file",
                            o->name, o->backing_path);
        goto done;
    }
    if (backend_plan_check_identity(b, subj, rec, o, &o->probe, o->probed, o->probe_error, lp.fs->name,
                                    rec ? rec->fs_uuid : NULL, &need_format))
        goto done;
    backend_plan_shrink_note(b, subj, p, o);
    plan_attachment(&lp);
    if (need_format)
        emit_format(&lp, "blank, created by layoutd; ");
    if (plan_mount(&lp)) {
        backend_plan_mount_flags(b, subj, o);
        backend_plan_identity(b, subj, rec, o, o->mounted_ours);
        backend_plan_grow(b, subj, rec, o, lp.fs, p->volume_size);
        backend_plan_limits(b, subj, p, o);
    }
done:
    free(lp.label);
}

void loop_backend_plan_grow(PlanBuilder *b, const PlanSubject *subj, const Pool *p, const VolumeRecord *rec,
                            const VolumeObservation *o, uint64_t new_size) {
    const BackendTraits *t = backend_traits(p->backend);
    if (!o->mounted_ours || !o->attached) {
        plan_builder_refuse(b, subj, PLAN_STEP_REFUSE, "not-mounted", true,
                            "cannot grow %s: it is not attached and mounted", o->name);
        return;
    }
    if (new_size <= o->file_size) {
        plan_builder_refuse(b, subj, PLAN_STEP_REFUSE, "shrink", true,
                            "cannot grow %s to %" PRIu64 " bytes: it already has %" PRIu64 " (volumes never shrink)",
                            o->name, new_size, o->file_size);
        return;
    }
    backend_plan_grow(b, subj, rec, o, t ? t->fs : NULL, new_size);
}

void loop_backend_plan_teardown(PlanBuilder *b, const PlanSubject *subj, const VolumeRecord *rec,
                                const VolumeObservation *o, const TeardownOptions *opts) {
    if (o && o->loop_mounted_elsewhere && !o->mounted_ours) {
        plan_builder_refuse(b, subj, PLAN_STEP_REFUSE, "mounted-elsewhere", true,
                            "refuse %s: %s is mounted on %s, which layoutd did not make; unmount it first",
                            subj->volume, o->loop.node, o->loop_mount.target);
        return;
    }
    if (o && o->mounted_ours) {
        PlanStep *st = plan_builder_emit(b, subj, PLAN_STEP_UNMOUNT, "unmount %s", o->mount_path);
        if (st)
            plan_builder_set(b, &st->mount_path, o->mount_path);
    }
    if (o && o->attached) {
        PlanStep *st = plan_builder_emit(b, subj, PLAN_STEP_DETACH, "detach %s from %s", o->backing_path ?: "?",
                                         o->loop.node);
        if (st)
            plan_builder_set(b, &st->path, o->loop.node);
    }
    if (opts->destroy_data)
        backend_plan_teardown_destroy(b, subj, rec, o, o ? o->mount_path : NULL, false);
}
