/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The filesystem table (fs-type.h): one row per filesystem. The comments
 * say why each default is there; docs/volumes-devices.md has the
 * measurements behind the ext4 ones.
 */
#include <linux/capability.h>

#include "fs-type.h"
#include "util.h"

#define STRV(...) ((const char *const[]) { __VA_ARGS__, NULL })

const FsType fs_types[_FS_TYPE_MAX] = {
    [FS_TYPE_EXT4] = {
        .name = "ext4",
        .display_name = "ext4",
        .package = "e2fsprogs",
        .label_max = 16,                /* mke2fs(8) */
        .min_size = 64 * MIB,
        .min_size_text = "64MiB",
        .fixed_inodes = true,
        .counts_inodes = true,
        .check_command = "e2fsck",
        .mkfs = {
            .program = "mkfs.ext4",
            .force = 'F',
            .arg_options = "bCcdEeGgIiJjLlMmNOorTtUz",
            /* nodiscard: the backing file is fresh and sparse; discarding
             *   it only walks the whole range through the loop into
             *   fallocate(PUNCH_HOLE) for nothing.
             * lazy_itable_init=0,lazy_journal_init=0: initialise inode
             *   tables and the journal now, so that no ext4lazyinit thread
             *   keeps writing for minutes after carving, dirtying this
             *   volume (a flush domain) while workspaces already run on it.
             * -m 0: no blocks reserved for root. The reserve is for a system
             *   disk's daemons; on a volume of its own it would only make
             *   "full" two things: df's 100% while root-run daemons (and the
             *   flush probe) still write. mkfs_options may give -m again
             *   (last wins). */
            .args = STRV("-q", "-E", "nodiscard,lazy_itable_init=0,lazy_journal_init=0", "-m", "0"),
            /* Storage that reads as zeros everywhere (a sparse file this
             * run created): assume_storage_prezeroed=1 (e2fsprogs 1.47)
             * skips zeroing and marks the inode tables zeroed, so there is
             * neither zeroing work now nor lazyinit writes later, and the
             * backing file stays sparse. Wrong on reused storage (old data
             * would read as inodes), hence opt-in. */
            .args_prezeroed = STRV("-q", "-E", "nodiscard,assume_storage_prezeroed=1", "-m", "0"),
            .label_option = "-L",
            .uuid_option = "-U",
        },
        /* resize2fs grows a mounted ext4 online, addressed by device; the
         * kernel's ext4_resize_begin() wants CAP_SYS_RESOURCE for it. */
        .grow = {
            .argv = STRV("resize2fs"),
            .target = FS_GROW_DEVICE,
            .online = true,
            .capability = CAP_SYS_RESOURCE,
            .capability_name = "CAP_SYS_RESOURCE",
        },
        /* Every error since mkfs (a filesystem with errors may go read-only,
         * or be remounted so). */
        .errors = {
            .format = FS_ERRORS_NUMBER,
            .path = "/sys/fs/ext4/{dev}/errors_count",
            .name = "errors_count",
        },
    },
    [FS_TYPE_XFS] = {
        .name = "xfs",
        .display_name = "XFS",
        .package = "xfsprogs",
        .label_max = 12,                /* mkfs.xfs(8) */
        .min_size = 300 * MIB,
        .min_size_text = "300MiB (the mkfs.xfs minimum)",
        .counts_inodes = true,
        .shares_extents = true,
        .check_command = "xfs_repair",
        .project_quota_option = "prjquota",
        .mkfs = {
            .program = "mkfs.xfs",
            .force = 'f',
            .arg_options = "bdilLmnNprs",
            /* -K: do not discard blocks at mkfs time, as for ext4. */
            .args = STRV("-q", "-K"),
            .label_option = "-L",
            .uuid_option = "-m",
            .uuid_prefix = "uuid=",
        },
        /* xfs_growfs works on the mount point, never on the device;
         * XFS_IOC_FSGROWFSDATA wants CAP_SYS_ADMIN, nothing more. */
        .grow = {
            .argv = STRV("xfs_growfs"),
            .target = FS_GROW_MOUNTPOINT,
            .online = true,
            .capability = CAP_SYS_ADMIN,
            .capability_name = "CAP_SYS_ADMIN",
        },
        /* XFS keeps no error count: it shuts down on a metadata error
         * (statfs then fails with EIO: the fs-shutdown finding). Its health
         * flags (the sick mask of XFS_IOC_FSGEOMETRY, `xfs_spaceman -c
         * health`) are not read. */
        .errors = { .format = FS_ERRORS_NONE },
    },
    [FS_TYPE_BTRFS] = {
        .name = "btrfs",
        .display_name = "btrfs",
        .package = "btrfs-progs",
        .label_max = 255,               /* BTRFS_LABEL_SIZE - 1 */
        .min_size = 128 * MIB,
        .min_size_text = "128MiB (mkfs.btrfs needs 109MiB)",
        .shares_extents = true,
        .check_command = "btrfs check",
        .mkfs = {
            .program = "mkfs.btrfs",
            .force = 'f',
            .force_long = "force",
            .arg_options = "bdlLmnORrsU",
            /* -K: no discard at mkfs time, as above. */
            .args = STRV("-q", "-K"),
            .label_option = "-L",
            .uuid_option = "-U",
        },
        /* Online, on the mount point; "max" fills the (refreshed) device.
         * BTRFS_IOC_RESIZE wants CAP_SYS_ADMIN. */
        .grow = {
            .argv = STRV("btrfs", "filesystem", "resize", "max"),
            .target = FS_GROW_MOUNTPOINT,
            .online = true,
            .capability = CAP_SYS_ADMIN,
            .capability_name = "CAP_SYS_ADMIN",
        },
        /* The device's I/O, corruption and generation errors, as `btrfs
         * device stats` shows them (Linux 5.14+). Devid 1: our volumes are
         * single-device filesystems. */
        .errors = {
            .format = FS_ERRORS_SUM,
            .path = "/sys/fs/btrfs/{uuid}/devinfo/1/error_stats",
            .name = "device stats",
        },
    },
};

const FsType *fs_type_find(const char *name) {
    if (!name)
        return NULL;
    for (size_t i = 0; i < ELEMENTSOF(fs_types); i++)
        if (streq(fs_types[i].name, name))
            return &fs_types[i];
    return NULL;
}

bool fs_type_can_grow(const FsType *fs, uint64_t missing_capabilities) {
    if (!fs || !fs->grow.online)
        return false;
    int cap = fs->grow.capability;
    return cap < 0 || cap >= 64 || !(missing_capabilities & (UINT64_C(1) << cap));
}
