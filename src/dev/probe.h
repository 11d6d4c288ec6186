/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Signature probing with libblkid (superblocks and partition tables), the
 * guard behind the promise "never format something that holds a signature
 * we did not create". Library code: 0 / -errno, never logs.
 */

#include <stdbool.h>

typedef struct ProbeResult {
    bool blank;              /* no signature of any kind (fs, raid, LUKS, partition table);
                                ambivalent results (several signatures) are NOT blank */
    char *type;              /* "ext4", "xfs", "crypto_LUKS", "dos", "gpt", ... or NULL */
    char *uuid;
    char *label;
    char *usage;             /* "filesystem", "crypto", "raid", "partition table", ... */
} ProbeResult;

/* Frees the members and zeroes *p; accepts a zeroed struct. */
void probe_result_done(ProbeResult *p);

/*
 * Low-level probe (superblocks + partition tables) of a file or block
 * device. When libblkid finds more than one signature (ambivalent), blank is
 * false and type is "ambivalent".
 * Returns: -errno (cannot open/probe), 0 with *ret.
 */
int probe_path(const char *path, ProbeResult *ret);
