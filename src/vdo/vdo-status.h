/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Parsers for what dm-vdo reports (pure, no I/O):
 *  - the status line (DM_DEVICE_STATUS, `dmsetup status`):
 *      <device> <mode> <in recovery> <index state> <compression state>
 *      <physical blocks used> <total physical blocks>
 *  - the reply to the "stats" target message (`dmsetup message NAME 0
 *    stats`), a one-line flow-style mapping written by the kernel's
 *    drivers/md/dm-vdo/message-stats.c:
 *      { version : 36, dataBlocksUsed : 0, overheadBlocksUsed : 2095, ...,
 *        mode : normal, ..., packer : { compressedFragmentsWritten : 0, ...}, ...}
 * Both are combined into VdoStats, which is what the rest of layoutd reads.
 */

#include <stdbool.h>
#include <stdint.h>

#include "macro.h"

typedef enum VdoMode {
    VDO_MODE_NORMAL,
    VDO_MODE_RECOVERING,
    VDO_MODE_READ_ONLY,     /* data loss is possible: only vdoforcerebuild
                               (offline) gets the volume out of it */
    _VDO_MODE_MAX,
    _VDO_MODE_INVALID = -EINVAL,
} VdoMode;

typedef enum VdoIndexState {
    VDO_INDEX_CLOSED,
    VDO_INDEX_CLOSING,
    VDO_INDEX_ERROR,
    VDO_INDEX_OFFLINE,
    VDO_INDEX_ONLINE,
    VDO_INDEX_OPENING,
    VDO_INDEX_UNKNOWN,
    _VDO_INDEX_STATE_MAX,
    _VDO_INDEX_STATE_INVALID = -EINVAL,
} VdoIndexState;

const char *vdo_mode_to_string(VdoMode m);
VdoMode vdo_mode_from_string(const char *s);
const char *vdo_index_state_to_string(VdoIndexState s);
VdoIndexState vdo_index_state_from_string(const char *s);

/* The status line, as the kernel reports it. Block counts are 4K blocks. */
typedef struct VdoStatus {
    VdoMode mode;
    bool in_recovery;               /* "recovering" vs "-" */
    VdoIndexState index_state;
    bool compression_online;        /* "online" vs "offline" */
    uint64_t physical_used;         /* data + metadata blocks in use */
    uint64_t physical_total;
} VdoStatus;

/*
 * Parses the target's status text (what DM_DEVICE_STATUS returns as the
 * target's params, or the part after "vdo " in `dmsetup status` output;
 * a leading "<start> <length> vdo " is accepted too).
 * Returns: -EINVAL (not a vdo status line), 0 with *ret.
 */
int vdo_status_parse(const char *line, VdoStatus *ret);

typedef struct VdoStats {
    /* from the status line */
    VdoMode mode;
    bool in_recovery;
    VdoIndexState index_state;
    bool compression_online;
    uint64_t physical_used;         /* 4K blocks, data + overhead */
    uint64_t physical_total;        /* 4K blocks */
    /* from the stats message (0 when has_message is false) */
    bool has_message;
    unsigned version;               /* the kernel's STATISTICS_VERSION */
    uint64_t data_blocks_used;      /* physical blocks holding user data */
    uint64_t overhead_blocks_used;  /* physical blocks holding VDO metadata */
    uint64_t logical_blocks_used;   /* logical blocks mapped */
    uint64_t logical_blocks;        /* logical size in blocks */
    uint64_t physical_blocks;
    uint64_t block_size;            /* bytes, 4096 */
    unsigned recovery_percentage;
    uint64_t complete_recoveries;
    uint64_t read_only_recoveries;
    uint64_t no_space_errors;       /* writes refused: out of physical space */
    uint64_t read_only_errors;      /* writes refused: read-only mode */
    uint64_t dedupe_advice_valid;   /* duplicates found through the index */
    uint64_t compressed_fragments_written;
    /* derived */
    int saving_percent;             /* 0..100, see vdo_stats_saving_percent() */
    bool degraded;                  /* read-only mode, or the index in error */
} VdoStats;

/*
 * Parses the reply to the "stats" message into the message part of *ret
 * (the status-line fields are left as they are; set has_message). Unknown
 * keys are ignored, so newer kernels with more counters still parse; the
 * counters layoutd needs (dataBlocksUsed, overheadBlocksUsed,
 * logicalBlocksUsed, physicalBlocks, logicalBlocks, mode) must be there.
 * Returns: -EINVAL (malformed, or a required key missing), -ERANGE (a number
 * overflows), 0.
 */
int vdo_stats_parse_message(const char *text, VdoStats *ret);

/* Copies the status line's fields into *stats and recomputes the derived
 * fields. A mode from the status line wins over the message's. */
void vdo_stats_apply_status(VdoStats *stats, const VdoStatus *status);

/* Recomputes saving_percent and degraded from the raw fields. */
void vdo_stats_derive(VdoStats *stats);

/*
 * Space saving in percent, as vdostats reports it:
 * (logical used - data used) / logical used, rounded down, 0 when nothing
 * is written, clamped to 0..100.
 */
int vdo_stats_saving_percent(uint64_t logical_blocks_used, uint64_t data_blocks_used);
