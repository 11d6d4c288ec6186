/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Formatting a VDO volume with the `vdoformat` tool (Debian package `vdo`;
 * on Debian 12 from bookworm-backports). Run as a child process with an
 * argv, never through a shell, and NEVER with --force: it formats only a
 * device that probe_path() says is blank, which this agent created.
 * Library code: 0 / -errno, never logs.
 */

#include <stdbool.h>
#include <stdint.h>

typedef struct VdoFormatOptions {
    uint64_t logical_size;       /* bytes, multiple of 4096, > 0 */
    unsigned slab_bits;          /* 0 = choose from the device size (see vdoformat_choose_slab_bits) */
} VdoFormatOptions;

/* The slab size as a power of two of 4K blocks. vdoformat's default (19,
 * 2 GiB slabs) leaves a small volume with one or two slabs and no room to
 * grow by less than 2 GiB; small devices get smaller slabs. A device keeps
 * at most 8192 slabs, so this also bounds its physical growth:
 * < 16 GiB -> 17 (512 MiB slabs, grows to 4 TiB), < 256 GiB -> 18 (1 GiB,
 * 8 TiB), else 19 (2 GiB, 16 TiB). */
unsigned vdoformat_choose_slab_bits(uint64_t device_size);

/*
 * argv for vdoformat: "vdoformat --logical-size=<N>K --slab-bits=<B>
 * <device>". Never --force.
 * Returns: -EINVAL (empty device, bad size, slab_bits outside 4..23),
 * -ENOMEM, 0 with *ret (strv).
 */
int vdoformat_build_argv(const char *device, uint64_t device_size, const VdoFormatOptions *opts, char ***ret);

/* Parses "vdoformat version is: 8.3.0.71" into up to 4 numbers (missing
 * ones are 0). Returns: -EINVAL, 0. */
int vdoformat_parse_version(const char *output, unsigned ret[4]);

typedef struct VdoFormatResult {
    uint64_t addressable;        /* bytes of physical data space ("can address 4.00 GB") */
    unsigned slabs;              /* data slabs */
    uint64_t slab_size;          /* bytes ("each 2.00 GB") */
} VdoFormatResult;

/* Parses vdoformat's report, "The VDO volume can address 4.00 GB in 2 data
 * slabs, each 2.00 GB." (sizes are binary units, rounded by vdoformat to
 * two decimals). Returns: -EINVAL (line not found), 0. */
int vdoformat_parse_output(const char *output, VdoFormatResult *ret);

/*
 * Formats device (a block device: the loop device of a backing file) as a
 * VDO volume. Checks first that vdoformat exists and reports a version
 * (>= 8), and that the device is blank (probe_path); refuses otherwise.
 * *ret_output (may be NULL) gets what vdoformat printed, also on -EPROTO.
 * Returns: -ENOENT (vdoformat missing: install the `vdo` package),
 * -EEXIST (the device holds a signature: never formatted over),
 * -EPROTONOSUPPORT (vdoformat too old or unparsable version), -EPROTO
 * (vdoformat failed), -errno, 0 with *ret (may be NULL).
 */
int vdoformat_run(const char *device, const VdoFormatOptions *opts, VdoFormatResult *ret, char **ret_output);
