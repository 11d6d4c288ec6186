/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Writeback (bdi) limits of a block device, /sys/class/bdi/<maj>:<min>/:
 * max_ratio, max_bytes (6.2+), strict_limit (6.2+). Limiting how much of the
 * dirty page budget one volume may hold keeps one noisy flush domain from
 * starving the others. Library code: 0 / -errno, never logs.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "layout.h"

typedef struct BdiLimits {
    int max_ratio;           /* percent */
    uint64_t max_bytes;
    int strict_limit;        /* -1 / 0 = not available on this kernel */
    bool has_max_bytes;
    bool has_strict_limit;
} BdiLimits;

/*
 * Reads the limits from /sys/class/bdi/M:m/.
 * Returns: -ENOENT if the device has no bdi, -errno, 0 with *ret.
 */
int bdi_read_limits(dev_t devno, BdiLimits *ret);

/*
 * Writes only the set knobs (max_ratio >= 0, max_bytes > 0,
 * strict_limit >= 0), then reads them back and returns -EIO if the kernel
 * did not take a value (max_bytes is rounded by the kernel to a ratio of
 * the dirty limit, so it is compared loosely: see bdi.c).
 * Returns: -EOPNOTSUPP for a knob the kernel lacks, -ENOENT (no bdi),
 * -errno, 0 on success.
 */
int bdi_apply_limits(dev_t devno, const WritebackLimits *want);
