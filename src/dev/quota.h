/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Project quotas of a workspace directory, set and read with quotactl(2)
 * (through quotactl_fd(2), on an fd of the volume's mount: no block device
 * path needed) and the FS_IOC_FSSETXATTR project id. Only XFS enforces them
 * here: ext4's project quota needs QFMT_V2 and a mkfs feature, which the
 * layouts do not ask for (docs/layout.md). Library code: 0 / -errno, never
 * logs.
 */

#include <stdbool.h>
#include <stdint.h>

/* What one project's quota says (bytes and inodes; limit 0 = none). */
typedef struct QuotaUsage {
    uint64_t limit_bytes;
    uint64_t used_bytes;
    uint64_t limit_inodes;
    uint64_t used_inodes;
} QuotaUsage;

/*
 * Whether this kernel can enforce project quotas on a filesystem of type
 * fs_type ("xfs", "ext4"...: FsType.project_quota_option). XFS's quota code is a build option
 * (CONFIG_XFS_QUOTA); /proc/fs/xfs/xqm exists only with it, once the xfs
 * module is loaded (callers that mount XFS load it).
 * Returns: 1 (supported), 0 with *ret_reason (static text) saying why not,
 * -ENOENT with *ret_reason when it cannot tell yet (XFS not loaded),
 * -EINVAL.
 */
int quota_kernel_support(const char *fs_type, const char **ret_reason);

/* The mount option that turns project quota enforcement on for fs_type,
 * or NULL where layoutd does not enforce quotas. */
const char *quota_mount_option(const char *fs_type);

/*
 * Whether the filesystem that mount_fd (any fd on it, O_PATH is fine) is
 * on accounts and enforces project quotas (Q_XGETQSTATV).
 * Returns: 1 enforced, 0 not (accounting off, or a kernel without quota
 * support: ENOSYS/EINVAL/ENOPKG from quotactl), -errno otherwise.
 */
int quota_project_enforced(int mount_fd);

/*
 * Gives directory dirfd project id `project` and the project-inherit flag,
 * so that everything made below it later is charged to the project.
 * Existing entries below are not relabelled (a new directory has none).
 * Returns: -errno, 0.
 */
int quota_dir_set_project(int dirfd, uint32_t project);

/* Reads directory dirfd's project id. Returns: -errno, 0 with *ret. */
int quota_dir_get_project(int dirfd, uint32_t *ret);

/*
 * Sets the hard (and soft, equal) limits of project `project` on the
 * filesystem of mount_fd (Q_XSETQLIM). 0 removes a limit.
 * Returns: -errno (-ENOSYS/-EINVAL: quotas off there), 0.
 */
int quota_set_limit(int mount_fd, uint32_t project, uint64_t limit_bytes, uint64_t limit_inodes);

/*
 * Reads project `project`'s limits and usage (Q_XGETQUOTA). A project the
 * filesystem has no record of yet reads as all zeros.
 * Returns: -errno, 0 with *ret.
 */
int quota_get(int mount_fd, uint32_t project, QuotaUsage *ret);
