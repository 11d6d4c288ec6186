/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "vdo-table.h"

int vdo_table_validate(const VdoTable *t, const char **ret_reason) {
    const char *why = NULL;

    if (!t)
        why = "no table";
    else if (isempty(t->storage_device))
        why = "no storage device";
    else if (strpbrk(t->storage_device, " \t\n"))
        /* The table is split on whitespace by the kernel. */
        why = "storage device path contains whitespace";
    else if (t->logical_size == 0 || t->logical_size % VDO_BLOCK_SIZE != 0)
        why = "logical size must be a positive multiple of 4096 bytes";
    else if (t->logical_size > VDO_LOGICAL_SIZE_MAX)
        why = "logical size exceeds 4 PiB";
    else if (t->storage_size / VDO_BLOCK_SIZE == 0)
        why = "storage device is smaller than one 4K block";
    else if (t->storage_size > VDO_PHYSICAL_SIZE_MAX)
        why = "storage device exceeds 256 TiB";
    else if (t->minimum_io_size != 512 && t->minimum_io_size != 4096)
        why = "minimum I/O size must be 512 or 4096";
    else if (t->block_map_cache % VDO_BLOCK_SIZE != 0)
        why = "block map cache must be a multiple of 4096 bytes";
    else if (t->block_map_cache / VDO_BLOCK_SIZE < VDO_BLOCK_MAP_CACHE_MIN_BLOCKS)
        why = "block map cache must be at least 128 MiB (32768 blocks)";
    else if (t->block_map_cache / VDO_BLOCK_SIZE > UINT32_MAX)
        why = "block map cache too large";
    else if (t->block_map_era > VDO_BLOCK_MAP_ERA_MAX)
        why = "block map era length must be at most 16380";

    if (why) {
        if (ret_reason)
            *ret_reason = why;
        return -EINVAL;
    }
    return 0;
}

uint64_t vdo_table_logical_sectors(const VdoTable *t) {
    return t->logical_size / VDO_SECTOR_SIZE;
}

int vdo_table_from_pool(const Pool *pool, const char *storage_device, uint64_t storage_size,
                        unsigned minimum_io_size, VdoTable *ret) {
    if (!pool || !ret || pool->backend != BACKEND_VDO_XFS || !pool->has_vdo)
        return -EINVAL;

    VdoTable t = {
        .logical_size = pool->vdo.logical_size,
        .storage_device = (char *) storage_device,
        .storage_size = storage_size,
        .minimum_io_size = minimum_io_size,
        .block_map_cache = pool->vdo.block_map_cache,
        .block_map_era = VDO_BLOCK_MAP_ERA_MAX,
        .deduplication = pool->vdo.deduplication,
        .compression = pool->vdo.compression,
    };
    int r = vdo_table_validate(&t, NULL);
    if (r < 0)
        return r;
    *ret = t;
    return 0;
}

int vdo_table_params(const VdoTable *t, char **ret) {
    int r = vdo_table_validate(t, NULL);
    if (r < 0)
        return r;

    /* Both switches are always written: the kernel's defaults differ
     * (deduplication on, compression off), and an explicit table reads the
     * same in `dmsetup table` as in the layout. */
    char *s = NULL;
    if (asprintf(&s, "V4 %s %" PRIu64 " %u %" PRIu64 " %u deduplication %s compression %s",
                 t->storage_device, t->storage_size / VDO_BLOCK_SIZE, t->minimum_io_size,
                 t->block_map_cache / VDO_BLOCK_SIZE,
                 t->block_map_era == 0 ? VDO_BLOCK_MAP_ERA_MAX : t->block_map_era,
                 t->deduplication ? "on" : "off", t->compression ? "on" : "off") < 0)
        return -ENOMEM;
    *ret = s;
    return 0;
}

int vdo_table_line(const VdoTable *t, char **ret) {
    _cleanup_free_ char *params = NULL;
    int r = vdo_table_params(t, &params);
    if (r < 0)
        return r;
    char *s = NULL;
    if (asprintf(&s, "0 %" PRIu64 " vdo %s", vdo_table_logical_sectors(t), params) < 0)
        return -ENOMEM;
    *ret = s;
    return 0;
}
