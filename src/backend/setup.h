/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * VolumeSetup: everything one volume's steps share while a plan is carried
 * out for it, in the style of systemd's HomeSetup. It records what THIS run
 * made (undo_file, undo_loop, undo_dm, undo_mount, undo_record), so that a
 * failure half-way undoes exactly that and nothing older, and it is where
 * the steps save the record (through the RecordStore, never by path).
 */

#include <stdbool.h>
#include <sys/types.h>

#include "layout.h"
#include "observation.h"
#include "plan.h"
#include "record-store.h"
#include "result.h"
#include "state.h"

typedef struct VolumeSetup {
    const Layout *layout;
    const Pool *pool;            /* the layout's pool of the volume, or NULL */
    StateRecord *record;
    RecordStore *store;
    const VolumeObservation *observed; /* before this run, or NULL */
    ApplyVolumeResult *result;
    const char *name;

    /* What this run made (undone in reverse order). */
    char *undo_file;             /* a backing file we created */
    char *undo_dir;              /* a directory we created (dir backend) */
    bool undo_record;            /* the volume record we added */
    char *undo_loop;             /* a loop device we attached */
    char *undo_dm;               /* a dm target we created (dm name) */
    char *undo_mount;            /* a mount we made */

    /* Runtime facts found or made by earlier steps. */
    char *loop_node;
    dev_t loop_devno;
    char *dm_node;               /* vdo-xfs: the device the filesystem is on */
    dev_t dm_devno;
    bool checked;                /* the backend's once-per-run checks passed
                                    (before its first step) */
} VolumeSetup;

/* Frees what the setup owns (not the borrowed pointers). */
void volume_setup_done(VolumeSetup *s);

/* The volume's entry in the record, or NULL. */
VolumeRecord *volume_setup_record(VolumeSetup *s);

/* Saves the record through the store (the volume's entry changed). On
 * failure the step's message says so. Returns: <0 on error, 0. */
int volume_setup_save(VolumeSetup *s, ApplyStepResult *sr);

/* The loop device of the volume's backing file: the one this run
 * attached, else the one the kernel has for the file. Sets loop_node and
 * loop_devno. Returns: -ENOENT (not attached), -errno, 0. */
int volume_setup_find_loop(VolumeSetup *s, const char *backing_path);

/* Undoes the mount, loop, file, directory and record this run made, in
 * reverse order (a dm target is the backend's to remove first). Each
 * failure is a note on the result, never hidden. */
void volume_setup_rollback_common(VolumeSetup *s);
