/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The dm-vdo table line (Documentation/admin-guide/device-mapper/vdo.rst,
 * table version V4), built from plain numbers. Pure: no I/O.
 *
 *   <offset> <logical sectors> vdo V4 <storage dev> <storage 4K blocks>
 *   <min I/O 512|4096> <block map cache 4K blocks> <era length>
 *   [deduplication on|off] [compression on|off]
 */

#include <stdbool.h>
#include <stdint.h>

#include "layout.h"

#define VDO_BLOCK_SIZE ((uint64_t) 4096)
#define VDO_SECTOR_SIZE ((uint64_t) 512)
#define VDO_BLOCK_MAP_CACHE_MIN_BLOCKS ((uint64_t) 32768)  /* 128 MiB, the kernel's minimum */
#define VDO_BLOCK_MAP_ERA_MAX 16380U               /* the kernel's maximum and advice */
#define VDO_LOGICAL_SIZE_MAX (4ULL * 1024 * TIB)   /* 4 PiB */
#define VDO_PHYSICAL_SIZE_MAX (256ULL * TIB)
/* The kernel refuses a physical growth of fewer blocks than this. */
#define VDO_PHYSICAL_GROW_MIN_BLOCKS ((uint64_t) 32832)

typedef struct VdoTable {
    uint64_t logical_size;        /* bytes, multiple of 4096, > 0 */
    char *storage_device;         /* "/dev/loop3" or "7:3"; borrowed */
    uint64_t storage_size;        /* bytes; only whole 4K blocks count */
    unsigned minimum_io_size;     /* 512 or 4096 */
    uint64_t block_map_cache;     /* bytes, multiple of 4096, >= 128 MiB */
    unsigned block_map_era;       /* 1..16380; 0 = the maximum */
    bool deduplication;
    bool compression;
} VdoTable;

/*
 * Fills *ret from a vdo-xfs pool (logical size, cache, switches) and the
 * storage device that will hold it. storage_device is borrowed (it must
 * outlive *ret). minimum_io_size is the storage device's logical block
 * size: 512 or 4096.
 * Returns: -EINVAL (not a vdo pool, or values out of range), 0.
 */
int vdo_table_from_pool(const Pool *pool, const char *storage_device, uint64_t storage_size,
                        unsigned minimum_io_size, VdoTable *ret);

/*
 * Checks every field against the kernel's ranges (see the header comment).
 * Returns: -EINVAL (with *ret_reason, a static string, when not NULL), 0.
 */
int vdo_table_validate(const VdoTable *t, const char **ret_reason);

/*
 * The parameter part of the table (what follows "vdo" on the line, as
 * dm_task_add_target() takes it): "V4 /dev/loop3 1310720 4096 32768 16380
 * deduplication on compression on".
 * Returns: -EINVAL (invalid table), -ENOMEM, 0 with *ret (free()).
 */
int vdo_table_params(const VdoTable *t, char **ret);

/*
 * The whole table line as `dmsetup table` prints it:
 * "0 20971520 vdo V4 /dev/vdb 1310720 4096 32768 16380 deduplication on
 * compression on".
 * Returns: -EINVAL, -ENOMEM, 0 with *ret (free()).
 */
int vdo_table_line(const VdoTable *t, char **ret);

/* Logical size in 512-byte sectors, the length of the target. */
uint64_t vdo_table_logical_sectors(const VdoTable *t);
