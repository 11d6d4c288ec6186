/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The loop backends (loop-ext4, loop-xfs, loop-btrfs): a sparse backing
 * file, a loop device in direct-I/O mode (read back from the kernel), the
 * filesystem of the backend's traits (its FsType row), a mount. The
 * planner is backend-loop-plan.c; the steps are the shared ones of
 * backend-steps.c, on the loop device.
 */
#include <errno.h>

#include "backend-internal.h"
#include "backend-loop.h"
#include "util.h"

static int loop_observe(const Layout *l, const VolumeSpec *spec, VolumeObservation *o) {
    int r = backend_observe_backing(spec, l, o);
    if (r < 0)
        return r;
    r = backend_observe_loop(o);
    if (r < 0)
        return r;
    backend_observe_probe(o, o->attached ? o->loop.node : NULL);
    if (o->attached) {
        if (o->mounted && o->mount.devno == o->loop.devno)
            o->mounted_ours = true;
        else if (mount_find_by_devno(o->loop.devno, &o->loop_mount) >= 0)
            o->loop_mounted_elsewhere = true;
    }
    return 0;
}

/* The loop device the steps work on. */
static int need_loop(VolumeSetup *s, const char *path, ApplyStepResult *sr) {
    VolumeRecord *rec = volume_setup_record(s);
    const char *backing = path ?: rec ? rec->backing_path : NULL;
    int r = volume_setup_find_loop(s, backing);
    if (r < 0)
        apply_step_result_message(sr, "no loop device for %s: %s", backing ?: s->name, strerror(-r));
    return r;
}

static int loop_apply_step(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr) {
    uint64_t size;
    int r;
    switch (p->kind) {
    case PLAN_STEP_CREATE_FILE:
        return backend_step_create_file(s, p, sr);
    case PLAN_STEP_DETACH:
        return backend_step_detach(s, p, sr);
    case PLAN_STEP_ATTACH:
        return backend_step_attach(s, p, sr);
    case PLAN_STEP_FORMAT:
        if ((r = need_loop(s, p->path, sr)) < 0)
            return r;
        return backend_step_format(s, p, s->loop_node, s->undo_file && streq(s->undo_file, p->path), sr);
    case PLAN_STEP_ADOPT:
        return backend_step_adopt(s, p, sr);
    case PLAN_STEP_MOUNT:
        if ((r = need_loop(s, NULL, sr)) < 0)
            return r;
        return backend_step_mount(s, p, s->loop_node, s->loop_devno, sr);
    case PLAN_STEP_GROW:
        if ((r = backend_grow_storage(s, p, &size, sr)) < 0)
            return r;
        return backend_grow_fs(s, p, s->loop_node, size, sr);
    case PLAN_STEP_SET_LIMITS:
        return backend_step_set_limits(s, p, sr);
    case PLAN_STEP_IDENTIFY:
        return backend_step_identify(s, p, sr);
    default:
        apply_step_result_message(sr, "%s is not a step of a loop volume", plan_step_kind_to_string(p->kind));
        return -EINVAL;
    }
}

/* A never-formatted file that this agent created holds nothing: a failed
 * run removes it even if an earlier run made it, so that a failed (or
 * partial) mkfs never leaves a half-made signature behind. */
static void loop_rollback(VolumeSetup *s) {
    VolumeRecord *rec = volume_setup_record(s);
    if (!s->undo_file && rec && rec->created_file && !rec->formatted && rec->backing_path) {
        s->undo_file = strdup(rec->backing_path);
        if (!s->undo_loop && volume_setup_find_loop(s, rec->backing_path) >= 0)
            s->undo_loop = strdup(s->loop_node);
        s->undo_record = true;
    }
    volume_setup_rollback_common(s);
}

static void loop_teardown(VolumeSetup *s, const VolumeObservation *o, const TeardownOptions *opts) {
    if (o && o->loop_mounted_elsewhere && !o->mounted_ours) {
        apply_volume_result_fail(s->result, APPLY_OUTCOME_REFUSED, -EBUSY,
                                 "%s is mounted on %s, which layoutd did not make; unmount it first", o->loop.node,
                                 o->loop_mount.target);
        return;
    }
    if (o && o->mounted_ours && backend_teardown_unmount(s, o->mount_path, opts) < 0)
        return;
    if (o && o->attached)
        (void) backend_teardown_detach(s, o->loop.node, o->backing_path);
}

static void loop_destroy(VolumeSetup *s, const VolumeObservation *o) {
    (void) backend_teardown_destroy(s, o, false);
}

/* One table for every loop backend: what differs between them is the
 * filesystem, which the planner takes from the backend's traits. */
const VolumeBackend loop_backend = {
    .observe = loop_observe,
    .plan = loop_backend_plan,
    .plan_grow = loop_backend_plan_grow,
    .apply_step = loop_apply_step,
    .rollback = loop_rollback,
    .plan_teardown = loop_backend_plan_teardown,
    .teardown = loop_teardown,
    .destroy = loop_destroy,
};
