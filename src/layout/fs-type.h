/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The filesystems a volume can have: one FsType row each, everything that
 * differs between them as data. mkfs and grow command lines, the label
 * limit, the package that has the tools, what an online grow needs, whether
 * the inode count is fixed at mkfs time, and where the kernel counts the
 * filesystem's errors. Every layer that must tell filesystems apart reads
 * the row (BackendTraits.fs, or fs_type_find() for a name from a record or
 * a plan step) instead of comparing names.
 *
 * Why the table lives here and not in src/dev: the layout's validator (the
 * minimum size, whether workspace_reserve_inodes means anything), the
 * planners (the label) and capacity (the grow capability, fixed inodes)
 * need it, and src/layout is the layer they all link; src/dev links
 * src/layout, not the other way round. So the rows are pure data, and the
 * code that acts on them lives where the devices are: src/dev/mkfs.c builds
 * the mkfs and grow argv from FsMkfs and FsGrow, src/dev/fs-errors.c reads
 * the counter that FsErrors points at.
 *
 * Adding a filesystem: a value in FsTypeId and its row in fs_types[]
 * (fs-type.c); then a backend whose traits point at it (docs/architecture.md).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

typedef enum FsTypeId {
    FS_TYPE_EXT4,
    FS_TYPE_XFS,
    FS_TYPE_BTRFS,
    _FS_TYPE_MAX,
    _FS_TYPE_INVALID = -EINVAL,
} FsTypeId;

/* mkfs: the program, the defaults suited to a loop-backed volume, and how
 * the label and the UUID are passed. Built by mkfs_build_argv(). */
typedef struct FsMkfs {
    const char *program;              /* "mkfs.ext4", found in PATH */
    char force;                       /* the short "overwrite any signature"
                                         flag: never passed, and refused in a
                                         pool's mkfs_options */
    const char *force_long;           /* its long name ("force"), or NULL when
                                         the tool takes no long options (then
                                         every long option is refused) */
    const char *arg_options;          /* short options that take an argument
                                         (getopt), so that "-L -F" is a label */
    const char *const *args;          /* after the program, before the label
                                         and UUID; NULL-terminated */
    const char *const *args_prezeroed;/* the same for storage known to read as
                                         zeros; NULL: args */
    const char *label_option;         /* "-L" */
    const char *uuid_option;          /* "-U", "-m" */
    const char *uuid_prefix;          /* before the UUID in the option's
                                         argument: "uuid=" (XFS), or NULL */
} FsMkfs;

typedef enum FsGrowTarget {
    FS_GROW_DEVICE,                   /* resize2fs DEV */
    FS_GROW_MOUNTPOINT,               /* xfs_growfs DIR, btrfs ... DIR */
} FsGrowTarget;

/* Growing the filesystem to fill its (larger) device. */
typedef struct FsGrow {
    const char *const *argv;          /* the program and the arguments before
                                         the target; NULL-terminated */
    FsGrowTarget target;
    bool online;                      /* grows while mounted (all ours do) */
    int capability;                   /* what the kernel checks for it: ext4's
                                         resize wants CAP_SYS_RESOURCE, XFS
                                         and btrfs CAP_SYS_ADMIN; -1: none */
    const char *capability_name;      /* "CAP_SYS_RESOURCE", for messages */
} FsGrow;

typedef enum FsErrorsFormat {
    FS_ERRORS_NONE,                   /* the filesystem keeps no error count */
    FS_ERRORS_NUMBER,                 /* the file holds one number */
    FS_ERRORS_SUM,                    /* "name value" lines, summed */
} FsErrorsFormat;

/* Where the kernel counts the errors the filesystem met since mkfs. */
typedef struct FsErrors {
    FsErrorsFormat format;
    const char *path;                 /* sysfs, with {dev} (the kernel name
                                         of the mounted device: "loop3") or
                                         {uuid} (the filesystem UUID) */
    const char *name;                 /* for messages: "errors_count" */
} FsErrors;

typedef struct FsType {
    const char *name;                 /* the mkfs/mount/blkid type: "ext4" */
    const char *display_name;         /* for messages: "ext4", "XFS" */
    const char *package;              /* the Debian package of its tools:
                                         "mkfs.xfs not found: install xfsprogs" */
    size_t label_max;                 /* bytes */
    uint64_t min_size;                /* the smallest volume mkfs accepts, with
                                         room to spare (bytes) */
    const char *min_size_text;        /* the same, worded for an error */
    bool fixed_inodes;                /* the inode count is set at mkfs time
                                         (ext4), so a workspace needs its
                                         inode reserve (workspace_reserve_
                                         inodes defaults to 4096, else 0) and
                                         a grow adds inodes in proportion;
                                         XFS and btrfs allocate inodes as
                                         they go */
    bool counts_inodes;               /* statfs reports an inode limit
                                         (f_files > 0): ext4, and XFS (up to
                                         its imaxpct); btrfs reports none */
    bool shares_extents;              /* copy_file_range within it shares the
                                         extents (a reflink: XFS with its
                                         default reflink=1, btrfs) instead of
                                         copying the bytes; ext4 copies */
    const char *check_command;        /* the offline check: "e2fsck" */
    const char *project_quota_option; /* the mount option that turns on
                                         enforced project quotas ("prjquota"
                                         on XFS); NULL: layoutd enforces no
                                         quota on it (ext4's needs QFMT_V2
                                         and a mkfs feature: not done) */
    FsMkfs mkfs;
    FsGrow grow;
    FsErrors errors;
} FsType;

/* Every filesystem, indexed by FsTypeId. */
extern const FsType fs_types[_FS_TYPE_MAX];

/* The row of a filesystem by its type name ("ext4", as mount and blkid
 * spell it), or NULL for one that is not in the table (or NULL). */
const FsType *fs_type_find(const char *name);

/* Whether a grow of fs is possible for a process whose effective set lacks
 * the capabilities in missing_capabilities (bit N: capability N). */
bool fs_type_can_grow(const FsType *fs, uint64_t missing_capabilities);
