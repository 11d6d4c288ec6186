/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The error counter the kernel keeps for a mounted filesystem, read where
 * its FsType row says (FsErrors, fs-type.h): ext4's errors_count, btrfs's
 * device stats. Library code: 0 / -errno, never logs.
 */

#include <stdint.h>
#include <sys/types.h>

#include "fs-type.h"

/*
 * Reads the errors fs counted since mkfs. devno: the mounted device (for
 * {dev} in the row's path); uuid: the filesystem's UUID (for {uuid}), may
 * be NULL when the path does not use it.
 * Returns: -EOPNOTSUPP (the filesystem keeps no counter), -ENOENT (no such
 * file: an older kernel, or not mounted), -EINVAL (unreadable content, or a
 * placeholder without its value), -ENOMEM, -errno, 0 with *ret.
 */
int fs_errors_read(const FsType *fs, dev_t devno, const char *uuid, uint64_t *ret);

/* Pure: the sum of the numbers of "name value" lines (btrfs's
 * error_stats). Returns: -EINVAL (a line without a number), 0 with *ret. */
int fs_errors_parse_sum(const char *text, uint64_t *ret);
