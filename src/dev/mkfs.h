/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * mkfs and grow argv for loop-backed volumes (pure), from the filesystem's
 * FsType row (fs-type.h), and a synchronous child runner (fork + execve, no
 * shell). fs-type.c and docs/volumes-devices.md say why each default option
 * is there. Library code: 0 / -errno, never logs.
 */

/*
 * Builds the argv for the mkfs of fstype (a name in the FsType table; pure,
 * unit-testable): the row's defaults suited to loop-backed volumes (ext4:
 * -q -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 -m 0 [-L label]
 * [-U uuid]; xfs: -q -K [-L label] [-m uuid=...]; btrfs: -q -K [-L label]
 * [-U uuid]), then the layout's extra_options, then the device. Never the
 * force flag (-F/-f/--force): we never force over an existing signature.
 * label and uuid may be NULL; extra_options may be NULL.
 * Returns: -EINVAL (unknown fstype, empty device, label too long for the
 * fs, an extra option that forces), -ENOMEM, 0 with *ret_argv (strv).
 */
int mkfs_build_argv(const char *fstype, const char *device, const char *label, const char *uuid,
                    char *const *extra_options, char ***ret_argv);

/*
 * Addition: as mkfs_build_argv, for storage the caller KNOWS reads as zeros
 * everywhere (a sparse backing file it has just created, nothing else):
 * ext4 gets -E nodiscard,assume_storage_prezeroed=1 (e2fsprogs >= 1.47.0)
 * instead of zeroing inode tables and journal at mkfs time: no zeroing,
 * no ext4lazyinit writes after mount, and the file stays sparse (measured
 * in docs/volumes-devices.md). XFS and btrfs need no zeroing: same argv
 * as mkfs_build_argv. Never use it on a reused file or a block device: old
 * data would be read as inodes.
 * Returns: as mkfs_build_argv.
 */
int mkfs_build_argv_prezeroed(const char *fstype, const char *device, const char *label, const char *uuid,
                              char *const *extra_options, char ***ret_argv);

/*
 * Runs a program as a child process (fork+exec, no shell, clean env,
 * stdout/stderr captured into *ret_output, bounded size) and waits for it.
 * argv[0] without a slash is searched in PATH=/usr/sbin:/usr/bin:/sbin:/bin.
 * ret_output and ret_status may be NULL. *ret_output and *ret_status are set
 * also when the program exited non-zero (-EPROTO), so the caller can show
 * why.
 * Returns: -ENOENT if the program is missing (e.g. mkfs.xfs not installed:
 * the caller says "install xfsprogs"), -EPROTO if it exited non-zero or was
 * killed (*ret_status has the wait status), -errno, 0 on success.
 */
int dev_run_program(char *const *argv, char **ret_output, int *ret_status);

/*
 * Grow the filesystem on a mounted volume, as its FsType row says:
 * resize2fs DEV (ext4), xfs_growfs MOUNTPOINT (xfs), btrfs filesystem
 * resize max MOUNTPOINT (btrfs); all online.
 * Returns: -EINVAL (unknown fstype or missing argument), -ENOMEM, 0.
 */
int mkfs_grow_argv(const char *fstype, const char *device, const char *mountpoint, char ***ret_argv);

/* Addition: the mkfs program for a fstype ("mkfs.ext4"), or NULL if unknown. */
const char *mkfs_program(const char *fstype);
