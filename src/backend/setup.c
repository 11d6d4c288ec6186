/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "loop.h"
#include "mount.h"
#include "setup.h"
#include "util.h"

void volume_setup_done(VolumeSetup *s) {
    free(s->undo_file);
    free(s->undo_dir);
    free(s->undo_loop);
    free(s->undo_dm);
    free(s->undo_mount);
    free(s->loop_node);
    free(s->dm_node);
    s->undo_file = s->undo_dir = s->undo_loop = s->undo_dm = s->undo_mount = s->loop_node = s->dm_node = NULL;
}

VolumeRecord *volume_setup_record(VolumeSetup *s) {
    return state_record_find_volume(s->record, s->name);
}

int volume_setup_save(VolumeSetup *s, ApplyStepResult *sr) {
    int r = record_store_save(s->store, s->record, s->name);
    if (r < 0 && sr)
        apply_step_result_message(sr, "cannot save the record: %s", strerror(-r));
    return r;
}

int volume_setup_find_loop(VolumeSetup *s, const char *backing_path) {
    if (s->loop_node)
        return 0;
    if (!backing_path)
        return -ENOENT;
    LoopInfo info = {};
    int r = loop_device_find_by_backing_file(backing_path, &info);
    if (r < 0)
        return r;
    s->loop_node = TAKE_PTR(info.node);
    s->loop_devno = info.devno;
    loop_info_done(&info);
    return 0;
}

void volume_setup_rollback_common(VolumeSetup *s) {
    ApplyVolumeResult *v = s->result;
    int r;
    if (!s->undo_mount && !s->undo_loop && !s->undo_file && !s->undo_dir && !s->undo_record && !s->undo_dm)
        return; /* this run made nothing for the volume: nothing to undo */
    if (s->undo_mount) {
        r = mount_unmount(s->undo_mount, false, NULL);
        if (r < 0 && r != -ENOENT)
            apply_volume_result_note(v, "rollback: unmounting %s failed: %s", s->undo_mount, strerror(-r));
    }
    if (s->undo_loop) {
        r = loop_device_detach(s->undo_loop);
        if (r < 0 && r != -ENXIO)
            apply_volume_result_note(v, "rollback: detaching %s failed: %s", s->undo_loop, strerror(-r));
    }
    if (s->undo_file && unlink(s->undo_file) < 0 && errno != ENOENT)
        apply_volume_result_note(v, "rollback: removing %s failed: %m", s->undo_file);
    if (s->undo_dir && rmdir(s->undo_dir) < 0 && errno != ENOENT)
        apply_volume_result_note(v, "rollback: removing directory %s failed: %m", s->undo_dir);
    if (s->undo_record) {
        (void) state_record_remove_volume(s->record, s->name);
        r = record_store_save(s->store, s->record, s->name);
        if (r < 0)
            apply_volume_result_note(v, "rollback: saving the record failed: %s", strerror(-r));
    }
    v->rolled_back = true;
}
