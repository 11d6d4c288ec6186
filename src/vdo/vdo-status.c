/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "string-table.h"
#include "vdo-status.h"

static const char *const vdo_mode_table[_VDO_MODE_MAX] = {
    [VDO_MODE_NORMAL] = "normal",
    [VDO_MODE_RECOVERING] = "recovering",
    [VDO_MODE_READ_ONLY] = "read-only",
};

static const char *const vdo_index_state_table[_VDO_INDEX_STATE_MAX] = {
    [VDO_INDEX_CLOSED] = "closed",
    [VDO_INDEX_CLOSING] = "closing",
    [VDO_INDEX_ERROR] = "error",
    [VDO_INDEX_OFFLINE] = "offline",
    [VDO_INDEX_ONLINE] = "online",
    [VDO_INDEX_OPENING] = "opening",
    [VDO_INDEX_UNKNOWN] = "unknown",
};

DEFINE_STRING_TABLE_LOOKUP(vdo_mode, VdoMode);
DEFINE_STRING_TABLE_LOOKUP(vdo_index_state, VdoIndexState);

/* Strict decimal u64: digits only, no sign, no overflow. */
static int parse_u64(const char *s, size_t len, uint64_t *ret) {
    uint64_t v = 0;
    if (len == 0)
        return -EINVAL;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -EINVAL;
        unsigned d = (unsigned) (s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -ERANGE;
        v = v * 10 + d;
    }
    *ret = v;
    return 0;
}

int vdo_status_parse(const char *line, VdoStatus *ret) {
    if (!line || !ret)
        return -EINVAL;

    /* Split on whitespace into at most 11 words. */
    char words[10][64];
    size_t n = 0;
    const char *p = line;
    for (;;) {
        while (*p && isspace((unsigned char) *p))
            p++;
        if (!*p)
            break;
        const char *start = p;
        while (*p && !isspace((unsigned char) *p))
            p++;
        size_t len = (size_t) (p - start);
        if (n >= ELEMENTSOF(words) || len >= sizeof(words[0]))
            return -EINVAL;
        memcpy(words[n], start, len);
        words[n][len] = 0;
        n++;
    }

    size_t o = 0;
    /* "0 20971520 vdo <dev> ..." as `dmsetup status` prints it. */
    if (n == 10 && streq(words[2], "vdo"))
        o = 3;
    else if (n != 7)
        return -EINVAL;

    VdoStatus s = {};
    s.mode = vdo_mode_from_string(words[o + 1]);
    if (s.mode < 0)
        return -EINVAL;
    if (streq(words[o + 2], "recovering"))
        s.in_recovery = true;
    else if (!streq(words[o + 2], "-"))
        return -EINVAL;
    s.index_state = vdo_index_state_from_string(words[o + 3]);
    if (s.index_state < 0)
        return -EINVAL;
    if (streq(words[o + 4], "online"))
        s.compression_online = true;
    else if (!streq(words[o + 4], "offline"))
        return -EINVAL;
    int r = parse_u64(words[o + 5], strlen(words[o + 5]), &s.physical_used);
    if (r < 0)
        return r;
    r = parse_u64(words[o + 6], strlen(words[o + 6]), &s.physical_total);
    if (r < 0)
        return r;
    if (s.physical_used > s.physical_total)
        return -EINVAL;

    *ret = s;
    return 0;
}

int vdo_stats_saving_percent(uint64_t logical_blocks_used, uint64_t data_blocks_used) {
    if (logical_blocks_used == 0 || data_blocks_used >= logical_blocks_used)
        return 0;
    /* (l - d) * 100 / l without overflow for any u64 l. */
    uint64_t saved = logical_blocks_used - data_blocks_used;
    if (saved <= UINT64_MAX / 100)
        return (int) (saved * 100 / logical_blocks_used);
    return (int) (saved / (logical_blocks_used / 100));
}

void vdo_stats_derive(VdoStats *stats) {
    stats->saving_percent = vdo_stats_saving_percent(stats->logical_blocks_used, stats->data_blocks_used);
    stats->degraded = stats->mode == VDO_MODE_READ_ONLY || stats->index_state == VDO_INDEX_ERROR;
}

void vdo_stats_apply_status(VdoStats *stats, const VdoStatus *status) {
    stats->mode = status->mode;
    stats->in_recovery = status->in_recovery;
    stats->index_state = status->index_state;
    stats->compression_online = status->compression_online;
    stats->physical_used = status->physical_used;
    stats->physical_total = status->physical_total;
    vdo_stats_derive(stats);
}

/* The counters we keep, by their path in the kernel's mapping. */
enum {
    F_VERSION,
    F_DATA_USED,
    F_OVERHEAD_USED,
    F_LOGICAL_USED,
    F_PHYSICAL_BLOCKS,
    F_LOGICAL_BLOCKS,
    F_BLOCK_SIZE,
    F_RECOVERY_PERCENTAGE,
    F_COMPLETE_RECOVERIES,
    F_READ_ONLY_RECOVERIES,
    F_NO_SPACE,
    F_READ_ONLY_ERRORS,
    F_DEDUPE_VALID,
    F_COMPRESSED_FRAGMENTS,
    F_MODE,
    _F_MAX,
};

static const struct {
    const char *path;
    bool required;
} fields[_F_MAX] = {
    [F_VERSION] = { "version", false },
    [F_DATA_USED] = { "dataBlocksUsed", true },
    [F_OVERHEAD_USED] = { "overheadBlocksUsed", true },
    [F_LOGICAL_USED] = { "logicalBlocksUsed", true },
    [F_PHYSICAL_BLOCKS] = { "physicalBlocks", true },
    [F_LOGICAL_BLOCKS] = { "logicalBlocks", true },
    [F_BLOCK_SIZE] = { "blockSize", false },
    [F_RECOVERY_PERCENTAGE] = { "recoveryPercentage", false },
    [F_COMPLETE_RECOVERIES] = { "completeRecoveries", false },
    [F_READ_ONLY_RECOVERIES] = { "readOnlyRecoveries", false },
    [F_NO_SPACE] = { "errors.noSpaceErrorCount", false },
    [F_READ_ONLY_ERRORS] = { "errors.readOnlyErrorCount", false },
    [F_DEDUPE_VALID] = { "hashLock.dedupeAdviceValid", false },
    [F_COMPRESSED_FRAGMENTS] = { "packer.compressedFragmentsWritten", false },
    [F_MODE] = { "mode", true },
};

typedef struct StatsParser {
    const char *p;
    char path[256];
    bool seen[_F_MAX];
    uint64_t value[_F_MAX];
    char mode[32];
    int depth;
} StatsParser;

static void skip_ws(StatsParser *s) {
    while (*s->p && isspace((unsigned char) *s->p))
        s->p++;
}

static int record(StatsParser *s, const char *v, size_t len) {
    for (int f = 0; f < _F_MAX; f++) {
        if (!streq(fields[f].path, s->path))
            continue;
        if (s->seen[f])
            return -EINVAL; /* a key twice: not the format we know */
        s->seen[f] = true;
        if (f == F_MODE) {
            if (len >= sizeof(s->mode))
                return -EINVAL;
            memcpy(s->mode, v, len);
            s->mode[len] = 0;
            return 0;
        }
        return parse_u64(v, len, &s->value[f]);
    }
    return 0; /* a counter we do not keep */
}

/* mapping := '{' [ key ':' (scalar | mapping) { ',' key ':' ... } [','] ] '}' */
static int parse_mapping(StatsParser *s) {
    if (++s->depth > 8)
        return -EINVAL;
    skip_ws(s);
    if (*s->p != '{')
        return -EINVAL;
    s->p++;
    size_t base = strlen(s->path);

    for (;;) {
        skip_ws(s);
        if (*s->p == '}') {
            s->p++;
            break;
        }
        /* key */
        const char *k = s->p;
        while (*s->p && (isalnum((unsigned char) *s->p) || *s->p == '_'))
            s->p++;
        size_t klen = (size_t) (s->p - k);
        if (klen == 0)
            return -EINVAL;
        if (base + 1 + klen + 1 > sizeof(s->path))
            return -EINVAL;
        if (base > 0)
            s->path[base] = '.';
        memcpy(s->path + base + (base > 0), k, klen);
        s->path[base + (base > 0) + klen] = 0;

        skip_ws(s);
        if (*s->p != ':')
            return -EINVAL;
        s->p++;
        skip_ws(s);

        int r;
        if (*s->p == '{') {
            r = parse_mapping(s);
            if (r < 0)
                return r;
        } else {
            const char *v = s->p;
            while (*s->p && *s->p != ',' && *s->p != '}')
                s->p++;
            size_t vlen = (size_t) (s->p - v);
            while (vlen > 0 && isspace((unsigned char) v[vlen - 1]))
                vlen--;
            if (vlen == 0)
                return -EINVAL;
            r = record(s, v, vlen);
            if (r < 0)
                return r;
        }
        s->path[base] = 0;

        skip_ws(s);
        if (*s->p == ',') {
            s->p++;
            continue;
        }
        if (*s->p == '}') {
            s->p++;
            break;
        }
        return -EINVAL;
    }
    s->depth--;
    return 0;
}

int vdo_stats_parse_message(const char *text, VdoStats *ret) {
    if (!text || !ret)
        return -EINVAL;

    StatsParser s = { .p = text };
    int r = parse_mapping(&s);
    if (r < 0)
        return r;
    skip_ws(&s);
    if (*s.p != 0)
        return -EINVAL;
    for (int f = 0; f < _F_MAX; f++)
        if (fields[f].required && !s.seen[f])
            return -EINVAL;
    VdoMode mode = vdo_mode_from_string(s.mode);
    if (mode < 0)
        return -EINVAL;
    if (s.value[F_LOGICAL_USED] > s.value[F_LOGICAL_BLOCKS] ||
        s.value[F_DATA_USED] + s.value[F_OVERHEAD_USED] > s.value[F_PHYSICAL_BLOCKS])
        return -EINVAL;

    ret->has_message = true;
    ret->mode = mode;
    ret->version = (unsigned) MIN(s.value[F_VERSION], (uint64_t) UINT32_MAX);
    ret->data_blocks_used = s.value[F_DATA_USED];
    ret->overhead_blocks_used = s.value[F_OVERHEAD_USED];
    ret->logical_blocks_used = s.value[F_LOGICAL_USED];
    ret->physical_blocks = s.value[F_PHYSICAL_BLOCKS];
    ret->logical_blocks = s.value[F_LOGICAL_BLOCKS];
    ret->block_size = s.seen[F_BLOCK_SIZE] ? s.value[F_BLOCK_SIZE] : 4096;
    ret->recovery_percentage = (unsigned) MIN(s.value[F_RECOVERY_PERCENTAGE], (uint64_t) 100);
    ret->complete_recoveries = s.value[F_COMPLETE_RECOVERIES];
    ret->read_only_recoveries = s.value[F_READ_ONLY_RECOVERIES];
    ret->no_space_errors = s.value[F_NO_SPACE];
    ret->read_only_errors = s.value[F_READ_ONLY_ERRORS];
    ret->dedupe_advice_valid = s.value[F_DEDUPE_VALID];
    ret->compressed_fragments_written = s.value[F_COMPRESSED_FRAGMENTS];
    vdo_stats_derive(ret);
    return 0;
}
