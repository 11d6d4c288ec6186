/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Teardown: the inverse of apply, for the volumes the record lists and
 * nothing else (a volume the plan refused as foreign is not ours to
 * unmount). No lazy unmount unless asked: a busy volume stays mounted and
 * the processes holding it are named.
 */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>

#include "apply-internal.h"
#include "loop.h"
#include "mount.h"
#include "util.h"

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    if (flag == FTW_DP || flag == FTW_D)
        return rmdir(path) < 0 ? -errno : 0;
    return unlink(path) < 0 ? -errno : 0;
}

/* rm -r that never crosses into another filesystem (FTW_MOUNT) and never
 * follows symlinks (FTW_PHYS). */
static int remove_tree(const char *path) {
    int r = nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
    if (r < 0 && errno == ENOENT)
        return 0;
    if (r > 0)
        return -r;
    return r < 0 ? negative_errno() : 0;
}

static ApplyVdoTeardownHandler vdo_teardown_handler = NULL;
static void *vdo_teardown_userdata = NULL;

void apply_set_vdo_teardown_handler(ApplyVdoTeardownHandler handler, void *userdata) {
    vdo_teardown_handler = handler;
    vdo_teardown_userdata = userdata;
}

/* vdo-xfs: unmount + dm remove + loop detach, all by src/vdo's handler. */
static int teardown_vdo(const VolumeObservation *o, const VolumeRecord *rec, const TeardownOptions *opts,
                        ApplyVolumeResult *v) {
    _cleanup_free_ char *desc = NULL, *msg = NULL;
    bool changed = false;
    if (asprintf(&desc, "unmount %s, remove dm-vdo layoutd-%s, detach %s", o && o->mount_path ? o->mount_path : "-",
                 rec->name, rec->backing_path ?: "-") < 0)
        return -ENOMEM;
    ApplyStepResult *sr = apply_volume_result_add_step(v, PLAN_STEP_VDO, desc);
    if (!sr)
        return -ENOMEM;
    int r = vdo_teardown_handler(o, rec, opts->lazy, &changed, &msg, vdo_teardown_userdata);
    sr->changed = changed;
    if (msg)
        apply_step_result_message(sr, "%s", msg);
    if (r < 0) {
        sr->error = r;
        apply_volume_result_fail(v, APPLY_OUTCOME_FAILED, r, "%s", msg ?: strerror(-r));
    }
    return r;
}

static void teardown_volume(const VolumeObservation *o, VolumeRecord *rec, StateRecord *record,
                            const char *record_path, const TeardownOptions *opts, ApplyVolumeResult *v) {
    ApplyStepResult *sr;
    int r;
    _cleanup_free_ char *desc = NULL;

    if (rec->backend == BACKEND_VDO_XFS && !vdo_teardown_handler) {
        apply_volume_result_fail(v, APPLY_OUTCOME_REFUSED, -EOPNOTSUPP,
                                 "vdo-xfs volumes are torn down by src/vdo; left as is");
        return;
    }
    if (state_record_count_workspaces(record, rec->name) > 0) {
        apply_volume_result_fail(v, APPLY_OUTCOME_REFUSED, -EBUSY,
                                 "%zu active workspace(s) are placed on %s; remove them first",
                                 state_record_count_workspaces(record, rec->name), rec->name);
        return;
    }

    if (rec->backend == BACKEND_VDO_XFS && teardown_vdo(o, rec, opts, v) < 0)
        return;

    if (backend_is_loop(rec->backend)) {
        if (o && o->loop_mounted_elsewhere && !o->mounted_ours) {
            apply_volume_result_fail(v, APPLY_OUTCOME_REFUSED, -EBUSY,
                                     "%s is mounted on %s, which layoutd did not make; unmount it first",
                                     o->loop.node, o->loop_mount.target);
            return;
        }
        if (o && o->mounted_ours) {
            if (asprintf(&desc, "unmount %s", o->mount_path) < 0)
                return;
            sr = apply_volume_result_add_step(v, PLAN_STEP_MOUNT, desc);
            if (!sr)
                return;
            _cleanup_strv_free_ char **holders = NULL;
            r = mount_unmount(o->mount_path, false, &holders);
            if (r == -EBUSY && opts->lazy) {
                apply_volume_result_note(v, "%s was busy: detached lazily (--lazy)", o->mount_path);
                r = mount_unmount(o->mount_path, true, NULL);
            }
            if (r < 0 && r != -ENOENT) {
                sr->error = r;
                _cleanup_free_ char *who = NULL;
                size_t len = 0;
                FILE *f = open_memstream(&who, &len);
                if (f) {
                    for (char **h = holders; h && *h; h++)
                        fprintf(f, "%s%s", h == holders ? "" : ", ", *h);
                    fclose(f);
                }
                apply_step_result_message(sr, "cannot unmount %s: %s%s%s", o->mount_path, strerror(-r),
                                          isempty(who) ? "" : "; held by ", isempty(who) ? "" : who);
                apply_volume_result_fail(v, APPLY_OUTCOME_FAILED, r, "%s", sr->message ?: "unmount failed");
                return;
            }
            sr->changed = true;
        }
        if (o && o->attached) {
            free(desc);
            desc = NULL;
            if (asprintf(&desc, "detach %s from %s", o->backing_path, o->loop.node) < 0)
                return;
            sr = apply_volume_result_add_step(v, PLAN_STEP_DETACH, desc);
            if (!sr)
                return;
            r = loop_device_detach(o->loop.node);
            if (r < 0 && r != -ENXIO) {
                sr->error = r;
                apply_step_result_message(sr, "cannot detach %s: %s", o->loop.node, strerror(-r));
                apply_volume_result_fail(v, APPLY_OUTCOME_FAILED, r, "%s", sr->message ?: "detach failed");
                return;
            }
            sr->changed = true;
        }
    }

    if (opts->destroy_data) {
        if (rec->backing_path && rec->created_file) {
            free(desc);
            desc = NULL;
            if (asprintf(&desc, "delete %s", rec->backing_path) < 0)
                return;
            sr = apply_volume_result_add_step(v, PLAN_STEP_CREATE_FILE, desc);
            if (!sr)
                return;
            if (unlink(rec->backing_path) < 0 && errno != ENOENT) {
                sr->error = negative_errno();
                apply_step_result_message(sr, "cannot delete %s: %m", rec->backing_path);
                apply_volume_result_fail(v, APPLY_OUTCOME_FAILED, sr->error, "%s", sr->message ?: "delete failed");
                return;
            }
            sr->changed = true;
        } else if (rec->backing_path)
            apply_volume_result_note(v, "%s was not created by layoutd: kept", rec->backing_path);
        if (o && o->mount_path) {
            free(desc);
            desc = NULL;
            if (asprintf(&desc, "remove %s", o->mount_path) < 0)
                return;
            sr = apply_volume_result_add_step(v, PLAN_STEP_CREATE_DIR, desc);
            if (!sr)
                return;
            if (rec->backend == BACKEND_DIR && rec->created_file)
                r = remove_tree(o->mount_path);
            else
                r = rmdir(o->mount_path) < 0 && errno != ENOENT ? negative_errno() : 0;
            if (r < 0) {
                sr->error = r;
                apply_step_result_message(sr, "cannot remove %s: %s", o->mount_path, strerror(-r));
                apply_volume_result_fail(v, APPLY_OUTCOME_FAILED, r, "%s", sr->message ?: "remove failed");
                return;
            }
            sr->changed = true;
        }
    }

    free(desc);
    desc = NULL;
    if (asprintf(&desc, "forget %s in the record%s", rec->name,
                 opts->destroy_data ? "" : " (files kept; apply will not adopt them again)") < 0)
        return;
    sr = apply_volume_result_add_step(v, PLAN_STEP_ADOPT, desc);
    if (!sr)
        return;
    (void) state_record_remove_volume(record, rec->name);
    sr->changed = true;
    v->outcome = APPLY_OUTCOME_CHANGED;
}

int apply_teardown(const Layout *l, const Observation *obs, StateRecord *record, const char *record_path,
                   const TeardownOptions *opts, ApplyResult **ret) {
    if (!l || !obs || !record || !opts || !ret)
        return -EINVAL;
    _cleanup_(apply_result_freep) ApplyResult *res = calloc(1, sizeof(*res));
    if (!res)
        return -ENOMEM;
    int r;

    for (size_t i = 0; i < obs->n; i++) {
        const VolumeObservation *o = &obs->volumes[i];
        VolumeRecord *rec = state_record_find_volume(record, o->name);
        if (!rec)
            continue; /* not ours */
        ApplyVolumeResult *v = apply_result_add_volume(res, o->name);
        if (!v)
            return -ENOMEM;
        teardown_volume(o, rec, record, record_path, opts, v);
        /* Save after each volume: a crash mid-way must not leave the
         * record claiming a volume we already destroyed. */
        if (v->outcome == APPLY_OUTCOME_CHANGED && record_path) {
            r = state_record_save(record, record_path);
            if (r < 0)
                apply_volume_result_fail(v, APPLY_OUTCOME_FAILED, r, "cannot save the record: %s", strerror(-r));
        }
    }

    if (record_path && record->n_volumes == 0 && record->n_workspaces == 0) {
        if (unlink(record_path) < 0 && errno != ENOENT) {
            r = negative_errno();
            ApplyVolumeResult *v = apply_result_add_volume(res, "record");
            if (!v)
                return -ENOMEM;
            apply_volume_result_fail(v, APPLY_OUTCOME_FAILED, r, "cannot remove %s: %s", record_path, strerror(-r));
        }
    }
    *ret = TAKE_PTR(res);
    return 0;
}
