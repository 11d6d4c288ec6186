/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Project quotas through quotactl_fd(2). Why not quotactl(2) with the
 * block device: a loop or dm device node is one more path to resolve and
 * race with; an fd on the mount names the filesystem itself.
 *
 * XFS counts in 512-byte basic blocks (BBs) in struct fs_disk_quota; the
 * conversions below are the only place that knows.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/dqblk_xfs.h>
#include <linux/fs.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/quota.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "quota.h"
#include "fs-type.h"
#include "macro.h"

#ifndef SYS_quotactl_fd
#define SYS_quotactl_fd 443
#endif

#define BB_SHIFT 9

static int qctl(int fd, int cmd, uint32_t id, void *addr) {
    if (syscall(SYS_quotactl_fd, fd, (unsigned) QCMD(cmd, PRJQUOTA), (unsigned) id, addr) < 0)
        return -errno;
    return 0;
}

int quota_kernel_support(const char *fs_type, const char **ret_reason) {
    if (!fs_type || !ret_reason)
        return -EINVAL;
    if (!quota_mount_option(fs_type)) {
        *ret_reason = "project quotas are enforced on XFS volumes only (loop-xfs, vdo); "
                      "this pool's filesystem is not XFS";
        return 0;
    }
    if (access("/proc/fs/xfs/xqm", F_OK) >= 0)
        return 1;
    if (access("/proc/fs/xfs", F_OK) < 0) {
        *ret_reason = "the kernel's XFS module is not loaded yet (no XFS volume mounted), so "
                      "whether it has quota support is unknown";
        return -ENOENT;
    }
    *ret_reason = "this kernel was built without XFS quota support (CONFIG_XFS_QUOTA: "
                  "/proc/fs/xfs/xqm is absent), so it cannot enforce a quota";
    return 0;
}

const char *quota_mount_option(const char *fs_type) {
    const FsType *fs = fs_type_find(fs_type);
    return fs ? fs->project_quota_option : NULL;
}

int quota_project_enforced(int mount_fd) {
    struct fs_quota_statv st = { .qs_version = FS_QSTATV_VERSION1 };
    int r = qctl(mount_fd, Q_XGETQSTATV, 0, &st);
    if (r == -ENOSYS || r == -EINVAL || r == -ENOPKG || r == -ENOTTY || r == -ESRCH || r == -EOPNOTSUPP)
        return 0;
    if (r < 0)
        return r;
    return (st.qs_flags & FS_QUOTA_PDQ_ACCT) && (st.qs_flags & FS_QUOTA_PDQ_ENFD) ? 1 : 0;
}

int quota_dir_set_project(int dirfd, uint32_t project) {
    struct fsxattr fa;
    if (ioctl(dirfd, FS_IOC_FSGETXATTR, &fa) < 0)
        return -errno;
    fa.fsx_projid = project;
    fa.fsx_xflags |= FS_XFLAG_PROJINHERIT;
    if (ioctl(dirfd, FS_IOC_FSSETXATTR, &fa) < 0)
        return -errno;
    return 0;
}

int quota_dir_get_project(int dirfd, uint32_t *ret) {
    struct fsxattr fa;
    if (!ret)
        return -EINVAL;
    if (ioctl(dirfd, FS_IOC_FSGETXATTR, &fa) < 0)
        return -errno;
    *ret = fa.fsx_projid;
    return 0;
}

int quota_set_limit(int mount_fd, uint32_t project, uint64_t limit_bytes, uint64_t limit_inodes) {
    /* Rounded up to whole basic blocks: a limit is never tighter than asked. */
    uint64_t bbs = (limit_bytes + (1u << BB_SHIFT) - 1) >> BB_SHIFT;
    struct fs_disk_quota d = {
        .d_version = FS_DQUOT_VERSION,
        .d_flags = FS_PROJ_QUOTA,
        .d_id = project,
        .d_fieldmask = FS_DQ_BHARD | FS_DQ_BSOFT | FS_DQ_IHARD | FS_DQ_ISOFT,
        .d_blk_hardlimit = bbs,
        .d_blk_softlimit = bbs,
        .d_ino_hardlimit = limit_inodes,
        .d_ino_softlimit = limit_inodes,
    };
    return qctl(mount_fd, Q_XSETQLIM, project, &d);
}

int quota_get(int mount_fd, uint32_t project, QuotaUsage *ret) {
    struct fs_disk_quota d = {};
    if (!ret)
        return -EINVAL;
    int r = qctl(mount_fd, Q_XGETQUOTA, project, &d);
    if (r == -ENOENT) { /* nothing charged to it yet */
        *ret = (QuotaUsage) {};
        return 0;
    }
    if (r < 0)
        return r;
    *ret = (QuotaUsage) {
        .limit_bytes = d.d_blk_hardlimit << BB_SHIFT,
        .used_bytes = d.d_bcount << BB_SHIFT,
        .limit_inodes = d.d_ino_hardlimit,
        .used_inodes = d.d_icount,
    };
    return 0;
}
