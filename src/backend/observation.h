/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * An observation: what is really there for every volume the engine looks
 * after (volume-set.h). Pure data, read from the kernel and the filesystem
 * by the backends' observe ops (stat, loop sysfs / LOOP_GET_STATUS64,
 * libblkid, mountinfo, bdi, statvfs, /sys/block/loopN/stat, dm-vdo status);
 * never assumed from the layout or the record. Observing changes nothing.
 *
 * One struct for every backend: each fills the sections it has (a dir
 * volume has no backing file, only vdo-xfs has a dm target). An
 * observation crosses the worker boundary as JSON (observation-json.c),
 * so every field here is also in that codec.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "bdi.h"
#include "layout.h"
#include "loop.h"
#include "mount.h"
#include "probe.h"
#include "state.h"
#include "vdo-status.h"
#include "volume-set.h"

/* /sys/block/loopN/stat (Documentation/block/stat.rst). */
typedef struct LoopIoStats {
    uint64_t read_ios, read_sectors, write_ios, write_sectors, in_flight, io_ticks_ms;
} LoopIoStats;

typedef struct VolumeObservation {
    char *name;                /* "state-0" */
    PoolRole role;
    unsigned index;
    Backend backend;           /* as in the VolumeSpec */
    bool declared;             /* see VolumeSpec */
    char *backing_path;        /* NULL for dir */
    char *mount_path;

    /* The backing file (or the pool's block device). */
    bool file_exists;
    int file_error;            /* stat errno other than ENOENT, else 0 */
    bool file_is_regular;
    bool file_is_block;        /* a block device named by the pool */
    uint64_t file_size;        /* apparent size */
    uint64_t file_allocated;   /* st_blocks * 512 */

    /* The loop device attached to it (by inode), if any. */
    bool attached;
    LoopInfo loop;
    bool has_bdi;
    BdiLimits bdi;
    bool has_io;
    LoopIoStats io;

    /* Signatures on the storage: the loop device if attached, else the
     * file. For the loop backends that is the filesystem; for vdo-xfs the VDO
     * super block. */
    bool probed;
    int probe_error;
    ProbeResult probe;

    /* vdo-xfs: the dm-vdo target on the storage and the filesystem on it. */
    bool dm_up;
    char *dm_name;             /* "layoutd-content-0" */
    char *dm_node;             /* "/dev/mapper/layoutd-content-0" */
    dev_t dm_devno;
    bool fs_probed;            /* the filesystem on the dm node */
    int fs_probe_error;
    ProbeResult fs_probe;
    bool has_vdo_stats;
    VdoStats vdo;
    char *vdo_error;           /* why the stats could not be read */

    /* What is mounted at mount_path, and where the storage is mounted. */
    bool dir_exists;           /* mount_path exists as a directory */
    bool mounted;              /* something is mounted at mount_path */
    MountInfo mount;
    bool mounted_ours;         /* ... and it is this volume's device (the loop
                                  device; the dm node for vdo-xfs) */
    bool loop_mounted_elsewhere; /* the volume's device is mounted, not at mount_path */
    MountInfo loop_mount;      /* that mount */

    /* The filesystem behind the mount (when mounted_ours, or dir). */
    bool has_statvfs;
    uint64_t fs_size, fs_used, fs_avail, fs_inodes, fs_inodes_free;
    bool fs_read_only;         /* ST_RDONLY: mounted ro, or remounted ro after errors */
    bool has_fs_errors;
    uint64_t fs_errors;        /* where the FsType row says (ext4: errors_count,
                                  btrfs: device stats); XFS keeps none */
    /* Writes fail although the mount says rw: ext4 went emergency_ro
     * (an error with errors=remount-ro... or the host fs full under it),
     * or the filesystem shut down (ext4 "shutdown", XFS: statvfs EIO). */
    bool fs_emergency_ro;
    bool fs_shutdown;
    int statvfs_error;         /* errno of statvfs(2) on the mount, else 0 */

    /* The identity file at the volume's root (identity.h), when it is up:
     * the UUID it names, or the errno of reading it (ENOENT: none). */
    char *identity;
    int identity_error;
} VolumeObservation;

typedef struct Observation {
    VolumeObservation *volumes;
    size_t n;
    /* Free space (f_bavail * f_frsize) of the filesystem that holds
     * <root>/images (or its nearest existing parent). */
    bool has_backing_free;
    uint64_t backing_free;
    uint64_t backing_size;     /* that filesystem's size */
    usec_t taken_at;           /* CLOCK_REALTIME when it was read */
} Observation;

void volume_observation_done(VolumeObservation *o);
Observation *observation_free(Observation *o);
DEFINE_TRIVIAL_CLEANUP_FUNC(Observation *, observation_free)

const VolumeObservation *observation_find(const Observation *o, const char *name);
VolumeObservation *observation_find_mut(Observation *o, const char *name);

/* True when the volume is in service: mounted (its own device at its own
 * path), or for dir an existing directory. */
bool volume_observation_is_up(const VolumeObservation *o);
/* The volume is in service and mounted with its filesystem's project
 * quota option (quota_mount_option): the kernel enforces quotas there. */
bool volume_observation_enforces_quota(const VolumeObservation *o);
/* The signature of the volume's filesystem (for vdo-xfs the XFS on the dm
 * node, else the storage's), or NULL when not probed. */
const ProbeResult *volume_observation_fs_probe(const VolumeObservation *o);

/* Replaces (or appends) the entry of v->name with a move of *v (v is
 * zeroed). Returns 0 or -ENOMEM (v untouched). */
int observation_put(Observation *o, VolumeObservation *v);

/* Drops the entry of name (a volume that is gone). Returns: whether there
 * was one. */
bool observation_remove(Observation *o, const char *name);

/* Reads /sys/block/loopN/stat. Returns -errno or 0. */
int observe_loop_io_stats(int loop_nr, LoopIoStats *ret);

/* Fills the statvfs fields of o from its mount path. Returns -errno or 0. */
int observe_statvfs(VolumeObservation *o);

/* The whole observation, every field, as json-c objects (the worker
 * protocol, and `layoutctl volumes --json` offline). observation_from_json
 * accepts what observation_to_json writes. Return 0, -ENOMEM, -EBADMSG. */
int observation_to_json(const Observation *o, json_object **ret);
int observation_from_json(json_object *j, Observation **ret);
/* The same as pretty-printed text. */
int observation_to_json_string(const Observation *o, char **ret);
