/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A small driver of the vdo backend for tests (host and VM guest):
 *
 *   vdo-smoke check
 *   vdo-smoke up VOLUME BACKING_FILE VOLUME_SIZE LOGICAL_SIZE [nodio]
 *   vdo-smoke stats VOLUME
 *   vdo-smoke grow VOLUME BACKING_FILE NEW_LOGICAL_SIZE
 *   vdo-smoke down VOLUME BACKING_FILE
 *
 * Prints key=value lines on stdout; errors on stderr. Exit status: 0, or
 * the errno of the failure (EOPNOTSUPP = 95 when the kernel lacks dm-vdo).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "util.h"
#include "vdo-dm.h"
#include "vdo-volume.h"

static int parse_size(const char *s, uint64_t *ret) {
    return layout_parse_size(s, ret);
}

static Pool make_pool(uint64_t volume_size, uint64_t logical_size, bool dio) {
    return (Pool) {
        .role = POOL_CONTENT,
        .declared = true,
        .backend = BACKEND_VDO_XFS,
        .volume_size = volume_size,
        .min_volumes = 1,
        .max_volumes = 1,
        .direct_io = dio,
        .shards = 1,
        .has_vdo = true,
        .vdo = {
            .logical_size = logical_size,
            .compression = true,
            .deduplication = true,
            .fstrim_interval = 24ULL * 3600 * USEC_PER_SEC,
            .block_map_cache = 128 * MIB,
        },
    };
}

static int report(int r, const char *what, const char *err) {
    fprintf(stderr, "vdo-smoke: %s: %s (%s)\n", what, err ?: strerror(-r), strerror(-r));
    return -r;
}

int main(int argc, char **argv) {
    _cleanup_free_ char *err = NULL;
    int r;

    if (argc >= 2 && streq(argv[1], "check")) {
        unsigned v[3] = {};
        r = vdo_dm_check_support(v, &err);
        if (r < 0)
            return report(r, "check", err);
        printf("vdo_target=%u.%u.%u\n", v[0], v[1], v[2]);
        return 0;
    }
    if (argc >= 6 && streq(argv[1], "up")) {
        uint64_t vs, ls;
        if (parse_size(argv[4], &vs) < 0 || parse_size(argv[5], &ls) < 0)
            return EINVAL;
        Pool p = make_pool(vs, ls, !(argc >= 7 && streq(argv[6], "nodio")));
        VdoVolumeInfo i = {};
        VdoVolumeUpOptions o = { .may_format = false };
        r = vdo_volume_up(&p, argv[2], argv[3], &o, &i, &err);
        if (r < 0)
            return report(r, "up", err);
        printf("dm_name=%s\ndm_node=%s\ndevno=%u:%u\nstorage=%s\ndirect_io=%d\ndio_fallback=%d\n"
               "created_file=%d\nattached=%d\nformatted=%d\ncreated=%d\nstorage_size=%" PRIu64 "\n",
               i.dm_name, i.dm_node, major(i.devno), minor(i.devno), i.storage_node, i.direct_io, i.dio_fallback,
               i.created_file, i.attached, i.formatted, i.created, i.storage_size);
        vdo_volume_info_done(&i);
        return 0;
    }
    if (argc >= 3 && streq(argv[1], "stats")) {
        VdoStats s = {};
        r = vdo_volume_stats(argv[2], &s, &err);
        if (r < 0)
            return report(r, "stats", err);
        printf("mode=%s\nin_recovery=%d\nindex_state=%s\ncompression_online=%d\nphysical_used=%" PRIu64
               "\nphysical_total=%" PRIu64 "\nhas_message=%d\ndata_blocks_used=%" PRIu64
               "\noverhead_blocks_used=%" PRIu64 "\nlogical_blocks_used=%" PRIu64 "\nlogical_blocks=%" PRIu64
               "\nphysical_blocks=%" PRIu64 "\ndedupe_advice_valid=%" PRIu64 "\ncompressed_fragments_written=%" PRIu64
               "\nsaving_percent=%d\ndegraded=%d\n",
               vdo_mode_to_string(s.mode), s.in_recovery, vdo_index_state_to_string(s.index_state),
               s.compression_online, s.physical_used, s.physical_total, s.has_message, s.data_blocks_used,
               s.overhead_blocks_used, s.logical_blocks_used, s.logical_blocks, s.physical_blocks,
               s.dedupe_advice_valid, s.compressed_fragments_written, s.saving_percent, s.degraded);
        return 0;
    }
    if (argc >= 5 && streq(argv[1], "grow")) {
        uint64_t ls;
        if (parse_size(argv[4], &ls) < 0)
            return EINVAL;
        Pool p = make_pool(0, ls, true);
        bool changed = false;
        r = vdo_volume_grow(&p, argv[2], argv[3], ls, &changed, &err);
        if (r < 0)
            return report(r, "grow", err);
        printf("changed=%d\n", changed);
        return 0;
    }
    if (argc >= 4 && streq(argv[1], "down")) {
        r = vdo_volume_down(argv[2], argv[3], &err);
        if (r < 0)
            return report(r, "down", err);
        return 0;
    }
    fprintf(stderr, "usage: vdo-smoke check|up|stats|grow|down ...\n");
    return EINVAL;
}
