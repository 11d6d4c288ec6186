/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The agent's record of what it made: volumes (backing files it created, the
 * filesystems it formatted, with UUID and label), workspaces (placement,
 * directories) and the FUSE daemons it runs (pid + start time, so a restarted
 * agent can re-adopt them). Persisted as versioned JSON at
 * <root>/layoutd-state.json, written atomically (temp, fsync, rename, fsync
 * dir). The record never papers over reality: callers compare it with what
 * they observe and report drift.
 *
 * This layer only serialises; it knows nothing of devices or daemons.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "layout.h"
#include "macro.h"

#define STATE_RECORD_VERSION 1

typedef struct VolumeRecord {
    char *name;            /* "state-0", "content-1" (layout_volume_name) */
    PoolRole role;
    unsigned index;
    Backend backend;
    char *backing_path;    /* backing file (or block device), NULL for dir */
    uint64_t size;         /* bytes the backing file was sized to */
    bool created_file;     /* this agent created the backing file */
    bool formatted;        /* this agent ran mkfs on it */
    char *fs_type;         /* "ext4" | "xfs" | NULL (not formatted yet) */
    char *fs_uuid;         /* as mkfs made it; identifies the volume */
    char *fs_label;        /* "layoutd-<volume>" (truncated to fs limit) */
    char *dm_name;         /* vdo-xfs: device-mapper name, else NULL */
    char *identity;        /* the UUID written in the volume's identity file
                              (<mount>/.layoutd-volume) when it was first
                              put in service; NULL before that */
    usec_t created_at;     /* CLOCK_REALTIME */
} VolumeRecord;

typedef struct DaemonRecord {
    pid_t pid;             /* 0: not running */
    uint64_t start_time;   /* /proc/<pid>/stat field 22 (clock ticks since
                              boot): pid + start_time name one process */
    char boot_id[33];      /* the boot's id at spawn (sd_id128_get_boot(),
                              32 hex digits, as `journalctl --list-boots`
                              shows it): a record from another boot never
                              matches; "" in records of an older layoutd */
    uint64_t boot_id_hash; /* what those recorded instead: an FNV-1a hash of
                              the id; still written, so that an older agent
                              (a downgrade) re-adopts the daemons too */
    dev_t mount_dev;       /* st_dev of the FUSE mount, 0 if unknown */
    unsigned restarts;     /* restarts since the workspace was created */
} DaemonRecord;

typedef struct WorkspaceRecord {
    char *id;
    char *tenant;          /* NULL: none */
    uint64_t quota;        /* bytes, 0: none */
    bool quota_changing;   /* a quota change is under way: its intent is on
                              disk before the kernel's limit changes, so a
                              restarted agent completes it */
    uint64_t quota_pending;/* what it changes to, while quota_changing */
    uint32_t project_id;   /* the project quota id of its state directory
                              (unique in the record), 0: none given */
    char **labels;         /* "key=value" strv, may be NULL */
    char *volume;          /* state volume name it is placed on */
    char *state_dir;       /* <volume mount>/workspaces/<id> */
    char *mountpoint;      /* <mount_root>/<id> */
    bool active;           /* false: removed with data kept (stickiness) */
    bool creating;         /* a create is under way (active is false): its
                              intent is on disk, its directory may not be
                              yet; a restarted agent completes it */
    usec_t created_at;     /* CLOCK_REALTIME */
    DaemonRecord daemon;
} WorkspaceRecord;

/* The larger of the workspace's quota and one being set: what decides
 * anything a quota forbids (a package store) while a change may be
 * half-done. */
static inline uint64_t workspace_record_quota_bound(const WorkspaceRecord *w) {
    return w->quota_changing && w->quota_pending > w->quota ? w->quota_pending : w->quota;
}

typedef struct StateRecord {
    unsigned version;      /* STATE_RECORD_VERSION */
    uint64_t generation;   /* +1 on every snapshot written (the agent coalesces, so it may skip) */
    VolumeRecord **volumes;
    size_t n_volumes;
    WorkspaceRecord **workspaces;
    size_t n_workspaces;
} StateRecord;

/* An empty record (no volumes, no workspaces). Returns 0 or -ENOMEM. */
int state_record_new(StateRecord **ret);

/*
 * Loads the record at path. A missing file gives an empty record (first
 * start). A file that does not parse, or has a newer version, is an error:
 * the agent must not overwrite what it does not understand.
 * Returns: -EBADMSG (corrupt), -EPROTONOSUPPORT (newer version), -errno, 0.
 */
int state_record_load(const char *path, StateRecord **ret);

/* Saves atomically and durably (write_file_atomic), bumping generation.
 * Returns: <0 on error (the old file stays), 0 on success. */
int state_record_save(StateRecord *s, const char *path);

/* The text state_record_save() writes (JSON and a newline, NUL-
 * terminated; *ret_len excludes the NUL), bumping generation: for a
 * writer elsewhere (the agent's saver thread). Returns 0 or -errno. */
int state_record_snapshot(StateRecord *s, char **ret_text, size_t *ret_len);

/* Serialises to/from JSON text (used by load/save and by tests). */
int state_record_to_json_string(const StateRecord *s, char **ret);
/* The same as a JSON tree (the caller owns it): for embedding it in a
 * message without printing and parsing it once more. */
struct json_object;
int state_record_to_json(const StateRecord *s, struct json_object **ret);
int state_record_from_json_string(const char *text, StateRecord **ret);

StateRecord *state_record_free(StateRecord *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(StateRecord *, state_record_free)

/* Lookups; NULL when absent. */
VolumeRecord *state_record_find_volume(const StateRecord *s, const char *name);
WorkspaceRecord *state_record_find_workspace(const StateRecord *s, const char *id);

/* Adds a deep copy of v / w (name / id must be new: -EEXIST). Sets
 * *ret (may be NULL) to the stored copy. Returns <0 on error, 0. */
int state_record_add_volume(StateRecord *s, const VolumeRecord *v, VolumeRecord **ret);
int state_record_add_workspace(StateRecord *s, const WorkspaceRecord *w, WorkspaceRecord **ret);

/* Takes v (heap-allocated) into the record, replacing the entry of the
 * same name or appending. Returns -EINVAL, -ENOMEM (v stays the caller's), 0. */
int state_record_put_volume(StateRecord *s, VolumeRecord *v);

/* Removes and frees; -ENOENT when absent. */
int state_record_remove_volume(StateRecord *s, const char *name);
int state_record_remove_workspace(StateRecord *s, const char *id);

/* Workspaces placed on a volume that count towards its bound: active
 * ones and those being created. */
size_t state_record_count_workspaces(const StateRecord *s, const char *volume);

VolumeRecord *volume_record_free(VolumeRecord *v);
WorkspaceRecord *workspace_record_free(WorkspaceRecord *w);
/* One volume entry as JSON, as in the record file; from_json validates it
 * as load does. Return 0, -ENOMEM, -EBADMSG. */
struct json_object;
int volume_record_to_json(const VolumeRecord *v, struct json_object **ret);
int volume_record_from_json(struct json_object *o, VolumeRecord **ret);
/* Deep copies. Return 0 or -ENOMEM. */
int volume_record_copy(const VolumeRecord *v, VolumeRecord **ret);
int workspace_record_copy(const WorkspaceRecord *w, WorkspaceRecord **ret);
