/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * dir: a plain directory on an existing filesystem (<root>/volumes/<vol>).
 * No device, no isolation: there for development and as the baseline the
 * benchmarks compare against. Observe, plan, apply and teardown in one
 * file, since there is so little of each.
 */
#include <errno.h>
#include <sys/stat.h>
#include <time.h>

#include "backend-dir.h"
#include "backend-internal.h"
#include "util.h"

static int dir_observe(const Layout *l, const VolumeSpec *spec, VolumeObservation *o) {
    return 0; /* the driver's common fields (the directory, the mount) are all there is */
}

static void dir_plan(PlanBuilder *b, const PlanSubject *subj, const Pool *p, const VolumeRecord *rec,
                     const VolumeObservation *o) {
    if (o->mounted) {
        /* Something is mounted on our directory: not ours to reuse. */
        plan_builder_refuse(b, subj, PLAN_STEP_REFUSE, "mount-path-busy", true,
                            "refuse %s: %s is a mount point of %s, not a plain directory", o->name, o->mount_path,
                            o->mount.source ?: "?");
        return;
    }
    PlanStep *s = NULL;
    if (!o->dir_exists)
        s = plan_builder_emit(b, subj, PLAN_STEP_CREATE_DIR, "create directory %s (backend dir: no isolation)",
                              o->mount_path);
    else if (!rec)
        s = plan_builder_emit(b, subj, PLAN_STEP_ADOPT, "record existing directory %s as volume %s", o->mount_path,
                              o->name);
    if (s)
        plan_builder_set(b, &s->path, o->mount_path);
    backend_plan_identity(b, subj, rec, o, o->dir_exists);
}

static int dir_record(VolumeSetup *s, const PlanStep *p, bool created, ApplyStepResult *sr) {
    if (volume_setup_record(s))
        return 0;
    VolumeRecord v = {
        .name = (char *) s->name,
        .role = p->role,
        .index = p->index,
        .backend = p->backend,
        .created_file = created,
        .created_at = now_usec(CLOCK_REALTIME),
    };
    int r = state_record_add_volume(s->record, &v, NULL);
    if (r < 0)
        return r;
    s->undo_record = true;
    return volume_setup_save(s, sr);
}

static int dir_apply_step(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr) {
    struct stat st;
    int r;
    switch (p->kind) {
    case PLAN_STEP_CREATE_DIR: {
        bool existed = stat(p->path, &st) == 0;
        r = mkdir_p(p->path, 0755);
        if (r < 0) {
            apply_step_result_message(sr, "cannot create %s: %s", p->path, strerror(-r));
            return r;
        }
        if (!existed && !(s->undo_dir = strdup(p->path)))
            return -ENOMEM;
        sr->changed = !existed;
        return dir_record(s, p, !existed, sr);
    }
    case PLAN_STEP_ADOPT:
        if (volume_setup_record(s))
            return 0;
        sr->changed = true;
        return dir_record(s, p, false, sr);
    case PLAN_STEP_IDENTIFY:
        return backend_step_identify(s, p, sr);
    default:
        apply_step_result_message(sr, "%s is not a step of a dir volume", plan_step_kind_to_string(p->kind));
        return -EINVAL;
    }
}

/* Nothing is mounted or attached: only --destroy-data removes anything,
 * and the whole tree only when layoutd created the directory. */
static void dir_plan_teardown(PlanBuilder *b, const PlanSubject *subj, const VolumeRecord *rec,
                              const VolumeObservation *o, const TeardownOptions *opts) {
    if (opts->destroy_data)
        backend_plan_teardown_destroy(b, subj, rec, o, o ? o->mount_path : NULL, rec && rec->created_file);
}

static void dir_teardown(VolumeSetup *s, const VolumeObservation *o, const TeardownOptions *opts) {
}

static void dir_destroy(VolumeSetup *s, const VolumeObservation *o) {
    VolumeRecord *rec = volume_setup_record(s);
    (void) backend_teardown_destroy(s, o, rec && rec->created_file);
}

const VolumeBackend dir_backend = {
    .observe = dir_observe,
    .plan = dir_plan,
    .apply_step = dir_apply_step,
    .rollback = volume_setup_rollback_common,
    .plan_teardown = dir_plan_teardown,
    .teardown = dir_teardown,
    .destroy = dir_destroy,
};
