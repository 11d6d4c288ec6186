/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "loop.h"
#include "mkfs.h"
#include "mount.h"
#include "probe.h"
#include "util.h"
#include "vdo-apply.h"
#include "vdo-dm.h"
#include "vdo-volume.h"

_printf_(2, 3) static void msg(char **ret_message, const char *fmt, ...) {
    if (!ret_message)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) >= 0) {
        free(*ret_message);
        *ret_message = s;
    }
    va_end(ap);
}

void vdo_apply_register(void) {
    apply_set_vdo_handler(vdo_apply_handler, NULL);
    apply_set_vdo_teardown_handler(vdo_teardown_handler, NULL);
}

int vdo_teardown_handler(const VolumeObservation *o, const VolumeRecord *rec, bool lazy, bool *ret_changed,
                         char **ret_message, void *userdata) {
    if (!rec || rec->backend != BACKEND_VDO_XFS)
        return -EINVAL;
    _cleanup_free_ char *dm_name = NULL, *err = NULL;
    bool changed = false;
    dev_t devno = 0;
    int r = vdo_volume_dm_name(rec->name, &dm_name);
    if (r < 0)
        return r;
    bool up = vdo_dm_get_devno(dm_name, &devno) >= 0;

    if (up && o && o->mounted && o->mount_path) {
        if (o->mount.devno != devno)
            return msg(ret_message, "%s is a mount point of another device, not /dev/mapper/%s: left as is",
                       o->mount_path, dm_name), -EBUSY;
        _cleanup_strv_free_ char **holders = NULL;
        r = mount_unmount(o->mount_path, false, &holders);
        if (r == -EBUSY && lazy)
            r = mount_unmount(o->mount_path, true, NULL);
        if (r < 0 && r != -ENOENT) {
            _cleanup_free_ char *who = NULL;
            size_t len = 0;
            FILE *f = open_memstream(&who, &len);
            if (f) {
                for (char **h = holders; h && *h; h++)
                    fprintf(f, "%s%s", h == holders ? "" : ", ", *h);
                fclose(f);
            }
            return msg(ret_message, "cannot unmount %s: %s%s%s", o->mount_path, strerror(-r),
                       isempty(who) ? "" : "; held by ", isempty(who) ? "" : who), r;
        }
        changed = true;
    } else if (up) {
        /* Mounted somewhere else? The dm remove below refuses an open
         * device with -EBUSY, which is the answer then. */
    }

    bool attached = false;
    const char *backing = rec->backing_path;
    if (backing) {
        LoopInfo li = {};
        if (loop_device_find_by_backing_file(backing, &li) >= 0) {
            attached = true;
            loop_info_done(&li);
        }
    }
    r = vdo_volume_down(rec->name, backing, &err);
    if (r < 0)
        return msg(ret_message, "cannot take %s down: %s", dm_name, err ?: strerror(-r)), r;
    changed = changed || up || attached;
    msg(ret_message, "%s%s", up ? "dm-vdo device removed" : "dm-vdo device was not up",
        attached ? ", loop device detached" : "");
    if (ret_changed)
        *ret_changed = changed;
    return 0;
}

static int format_xfs(const Pool *pool, const PlanStep *step, VolumeRecord *rec, StateRecord *record,
                      const char *record_path, const char *node, char **ret_message) {
    _cleanup_free_ char *uuid = NULL, *label = NULL, *out = NULL;
    _cleanup_strv_free_ char **argv = NULL;
    int r = apply_generate_uuid(&uuid);
    if (r < 0)
        return r;
    r = plan_volume_label("xfs", step->role, step->index, step->volume, &label);
    if (r < 0)
        return r;
    /* The UUID goes into the record before mkfs writes it, so an
     * interrupted run finds a filesystem it can recognise as its own. */
    free(rec->fs_type);
    free(rec->fs_uuid);
    free(rec->fs_label);
    rec->fs_type = strdup("xfs");
    rec->fs_uuid = strdup(uuid);
    rec->fs_label = strdup(label);
    if (!rec->fs_type || !rec->fs_uuid || !rec->fs_label)
        return -ENOMEM;
    r = state_record_save(record, record_path);
    if (r < 0)
        return msg(ret_message, "cannot save the record %s: %s", record_path, strerror(-r)), r;

    /* mkfs_build_argv gives -K for xfs: no discard of the whole device at
     * mkfs time, which on VDO would only cost time (it is all unmapped). */
    r = mkfs_build_argv("xfs", node, label, uuid, pool->mkfs_options, &argv);
    if (r < 0)
        return msg(ret_message, "invalid mkfs options for %s", step->volume), r;
    r = dev_run_program(argv, &out, NULL);
    if (r == -ENOENT)
        return msg(ret_message, "mkfs.xfs not found: install xfsprogs"), r;
    if (r < 0)
        return msg(ret_message, "mkfs.xfs %s failed: %s", node, out ?: strerror(-r)), r;
    rec->formatted = true;
    r = state_record_save(record, record_path);
    if (r < 0)
        return msg(ret_message, "cannot save the record %s: %s", record_path, strerror(-r)), r;
    return 0;
}

int vdo_apply_handler(const Layout *l, const PlanStep *step, StateRecord *record, const char *record_path,
                      bool *ret_changed, char **ret_message, void *userdata) {
    if (!l || !step || !record || !record_path)
        return -EINVAL;
    const Pool *pool = layout_pool(l, step->role);
    if (!pool || pool->backend != BACKEND_VDO_XFS || !pool->has_vdo)
        return msg(ret_message, "%s is not a vdo-xfs volume", step->volume), -EINVAL;

    const char *why = NULL;
    if (vdo_mount_options_check(pool->mount_options, &why) < 0)
        return msg(ret_message, "refusing to mount %s: %s", step->volume, why), -EINVAL;

    const char *backing = pool->vdo.device ?: step->path;
    bool changed = false, added_record = false;
    int r;
    VolumeRecord *rec = state_record_find_volume(record, step->volume);
    bool file_exists = backing && access(backing, F_OK) == 0;
    _cleanup_free_ char *dm_name = NULL;
    r = vdo_volume_dm_name(step->volume, &dm_name);
    if (r < 0)
        return r;

    if (!rec) {
        /* The intent first: a crash after the file is created leaves a
         * record that says the file is ours. */
        VolumeRecord v = {
            .name = step->volume,
            .role = step->role,
            .index = step->index,
            .backend = BACKEND_VDO_XFS,
            .backing_path = (char *) backing,
            .size = pool->volume_size,
            .created_file = !file_exists && !pool->vdo.device,
            .dm_name = dm_name,
            .created_at = now_usec(CLOCK_REALTIME),
        };
        r = state_record_add_volume(record, &v, &rec);
        if (r < 0)
            return r;
        added_record = true;
        r = state_record_save(record, record_path);
        if (r < 0) {
            (void) state_record_remove_volume(record, step->volume);
            return msg(ret_message, "cannot save the record %s: %s", record_path, strerror(-r)), r;
        }
    }

    VdoVolumeUpOptions uo = { .may_format = rec->created_file && !rec->formatted };
    VdoVolumeInfo info = {};
    _cleanup_free_ char *err = NULL;
    r = vdo_volume_up(pool, step->volume, backing, &uo, &info, &err);
    if (r < 0) {
        msg(ret_message, "%s", err ?: strerror(-r));
        goto undo_record;
    }
    changed = info.created_file || info.attached || info.formatted || info.created;

    ProbeResult pr = {};
    r = probe_path(info.dm_node, &pr);
    if (r < 0) {
        msg(ret_message, "cannot probe %s: %s", info.dm_node, strerror(-r));
        goto undo_up;
    }
    if (pr.blank) {
        if (!info.formatted && !(rec->created_file && !rec->formatted)) {
            msg(ret_message, "%s is blank but was not formatted by this agent: not making a filesystem", info.dm_node);
            r = -EEXIST;
        } else {
            r = format_xfs(pool, step, rec, record, record_path, info.dm_node, ret_message);
            changed = true;
        }
    } else if (!pr.type || !streq(pr.type, "xfs") || !rec->fs_uuid || !pr.uuid ||
               strcasecmp(pr.uuid, rec->fs_uuid) != 0) {
        msg(ret_message, "%s holds %s %s, not the filesystem this agent made: refusing it", info.dm_node,
            pr.type ?: "an unknown signature", pr.uuid ?: "");
        r = -EEXIST;
    }
    probe_result_done(&pr);
    if (r < 0)
        goto undo_up;

    MountInfo mi = {};
    r = mount_find_by_target(step->mount_path, &mi);
    if (r >= 0) {
        bool ours = mi.devno == info.devno;
        mount_info_done(&mi);
        if (!ours) {
            msg(ret_message, "%s is already a mount point of another device", step->mount_path);
            r = -EBUSY;
            goto undo_up;
        }
    } else {
        r = mount_volume(info.dm_node, step->mount_path, "xfs", pool->mount_options);
        if (r < 0) {
            msg(ret_message, "cannot mount %s on %s: %s", info.dm_node, step->mount_path, strerror(-r));
            goto undo_up;
        }
        changed = true;
    }

    if (!rec->dm_name) {
        rec->dm_name = strdup(info.dm_name);
        if (rec->dm_name)
            (void) state_record_save(record, record_path);
    }
    msg(ret_message, "%s on %s (%s, %s)%s", info.dm_node, info.storage_node,
        info.direct_io ? "direct I/O" : "buffered", info.formatted ? "formatted now" : "existing VDO",
        info.dio_fallback ? "; direct I/O refused by the kernel, buffered" : "");
    vdo_volume_info_done(&info);
    if (ret_changed)
        *ret_changed = changed;
    return 0;

undo_up:
    /* Only what this call brought up goes down again. */
    if (info.created || info.attached) {
        _cleanup_free_ char *ignored = NULL;
        (void) vdo_volume_down(step->volume, info.attached ? backing : NULL, &ignored);
    }
    if (info.created_file && !rec->formatted)
        (void) unlink(backing);
    vdo_volume_info_done(&info);
undo_record:
    if (added_record && (!backing || access(backing, F_OK) < 0)) {
        (void) state_record_remove_volume(record, step->volume);
        (void) state_record_save(record, record_path);
    }
    return r;
}
