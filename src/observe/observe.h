/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Observe: what is really there for every volume the engine looks after
 * (volume-set.h). Pure data, read from the kernel and the filesystem
 * (stat, loop sysfs / LOOP_GET_STATUS64, libblkid, mountinfo, bdi, statvfs,
 * /sys/block/loopN/stat); never assumed from the layout or the record.
 * Observing changes nothing. Library code: 0 / -errno, never logs.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bdi.h"
#include "layout.h"
#include "loop.h"
#include "mount.h"
#include "probe.h"
#include "state.h"
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

    /* The backing file. */
    bool file_exists;
    int file_error;            /* stat errno other than ENOENT, else 0 */
    bool file_is_regular;
    uint64_t file_size;        /* apparent size */
    uint64_t file_allocated;   /* st_blocks * 512 */

    /* The loop device attached to it (by inode), if any. */
    bool attached;
    LoopInfo loop;

    /* Signatures, probed on the loop device if attached, else on the file. */
    bool probed;
    int probe_error;
    ProbeResult probe;

    /* What is mounted at mount_path, and where the loop device is mounted. */
    bool mounted;              /* something is mounted at mount_path */
    MountInfo mount;
    bool mounted_ours;         /* ... and it is this volume's loop device */
    bool loop_mounted_elsewhere; /* the loop device is mounted, not at mount_path */
    MountInfo loop_mount;      /* that mount */

    bool dir_exists;           /* mount_path exists as a directory */

    bool has_bdi;
    BdiLimits bdi;

    bool has_statvfs;          /* of the mount, when mounted_ours (or dir backend) */
    uint64_t fs_size, fs_used, fs_avail, fs_inodes, fs_inodes_free;

    bool has_io;
    LoopIoStats io;
} VolumeObservation;

typedef struct Observation {
    VolumeObservation *volumes;
    size_t n;
    /* Free space (f_bavail * f_frsize) of the filesystem that holds
     * <root>/images (or its nearest existing parent). */
    bool has_backing_free;
    uint64_t backing_free;
} Observation;

/* Observes every volume of volume_spec_list_compute(l, record).
 * Per-volume problems (an unreadable file, a probe error) are recorded in
 * that volume's fields, not returned.
 * Returns: -ENOMEM, -EINVAL, 0 with *ret. */
int observe_volumes(const Layout *l, const StateRecord *record, Observation **ret);

/* Observes one volume. Returns: -ENOMEM, -EINVAL, 0 (ret filled; free with
 * volume_observation_done). */
int observe_volume(const Layout *l, const VolumeSpec *spec, VolumeObservation *ret);

void volume_observation_done(VolumeObservation *o);
Observation *observation_free(Observation *o);
DEFINE_TRIVIAL_CLEANUP_FUNC(Observation *, observation_free)

const VolumeObservation *observation_find(const Observation *o, const char *name);

/* Reads /sys/block/loopN/stat. Returns -errno or 0. */
int observe_loop_io_stats(int loop_nr, LoopIoStats *ret);

/* The observation as JSON text (for `layoutctl volumes --json` and the API). */
int observation_to_json_string(const Observation *o, char **ret);
