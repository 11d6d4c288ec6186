/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for the dm-vdo status line and "stats" message parsers, on
 * output captured from a real dm-vdo (tests/vdo/samples/README). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include "util.h"
#include "vdo-status.h"

static char *sample(const char *name) {
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", VDO_SAMPLES, name);
    char *data = NULL;
    assert_int_equal(read_full_file(path, &data, NULL), 0);
    return data;
}

static void test_enums(void **state) {
    for (int i = 0; i < _VDO_MODE_MAX; i++)
        assert_int_equal(vdo_mode_from_string(vdo_mode_to_string(i)), i);
    for (int i = 0; i < _VDO_INDEX_STATE_MAX; i++)
        assert_int_equal(vdo_index_state_from_string(vdo_index_state_to_string(i)), i);
    assert_int_equal(vdo_mode_from_string("readonly"), _VDO_MODE_INVALID);
    assert_int_equal(vdo_mode_from_string(NULL), _VDO_MODE_INVALID);
    assert_null(vdo_mode_to_string(_VDO_MODE_MAX));
    assert_string_equal(vdo_mode_to_string(VDO_MODE_READ_ONLY), "read-only");
}

static void test_status_samples(void **state) {
    char *fresh = sample("status-fresh.txt"), *written = sample("status-written.txt");
    VdoStatus s = {};

    assert_int_equal(vdo_status_parse(fresh, &s), 0);
    assert_int_equal(s.mode, VDO_MODE_NORMAL);
    assert_false(s.in_recovery);
    assert_int_equal(s.index_state, VDO_INDEX_OPENING);
    assert_true(s.compression_online);
    assert_int_equal(s.physical_used, 1049284);
    assert_int_equal(s.physical_total, 2097152);

    assert_int_equal(vdo_status_parse(written, &s), 0);
    assert_int_equal(s.index_state, VDO_INDEX_ONLINE);
    assert_int_equal(s.physical_used, 1072284);

    /* the target's part only, as DM_DEVICE_STATUS returns it */
    assert_int_equal(vdo_status_parse("/dev/loop3 read-only recovering error offline 10 20", &s), 0);
    assert_int_equal(s.mode, VDO_MODE_READ_ONLY);
    assert_true(s.in_recovery);
    assert_int_equal(s.index_state, VDO_INDEX_ERROR);
    assert_false(s.compression_online);
    free(fresh);
    free(written);
}

static void test_status_bad(void **state) {
    VdoStatus s = { .physical_used = 77 };
    const char *bad[] = {
        "",
        "/dev/vdb normal - online online 1 ",                 /* too short */
        "/dev/vdb normal - online online 1 2 3",              /* too long */
        "/dev/vdb sleepy - online online 1 2",                /* mode */
        "/dev/vdb normal x online online 1 2",                /* recovery */
        "/dev/vdb normal - lost online 1 2",                  /* index */
        "/dev/vdb normal - online maybe 1 2",                 /* compression */
        "/dev/vdb normal - online online -1 2",               /* sign */
        "/dev/vdb normal - online online 3 2",                /* used > total */
        "/dev/vdb normal - online online 1 99999999999999999999", /* overflow */
        "0 100 linear /dev/vdb normal - online online 1 2",   /* not vdo */
    };
    for (size_t i = 0; i < ELEMENTSOF(bad); i++)
        assert_int_not_equal(vdo_status_parse(bad[i], &s), 0);
    assert_int_equal(s.physical_used, 77); /* untouched on failure */
}

static void test_stats_fresh(void **state) {
    char *text = sample("stats-fresh.txt");
    VdoStats st = {};
    assert_int_equal(vdo_stats_parse_message(text, &st), 0);
    assert_true(st.has_message);
    assert_int_equal(st.version, 36);
    assert_int_equal(st.data_blocks_used, 0);
    assert_int_equal(st.overhead_blocks_used, 1049284);
    assert_int_equal(st.logical_blocks_used, 0);
    assert_int_equal(st.physical_blocks, 2097152);
    assert_int_equal(st.logical_blocks, 5242880);
    assert_int_equal(st.block_size, 4096);
    assert_int_equal(st.recovery_percentage, 100);
    assert_int_equal(st.mode, VDO_MODE_NORMAL);
    assert_int_equal(st.saving_percent, 0);
    assert_false(st.degraded);
    free(text);
}

static void test_stats_written(void **state) {
    char *text = sample("stats-written.txt"), *line = sample("status-written.txt");
    VdoStats st = {};
    VdoStatus s = {};
    assert_int_equal(vdo_stats_parse_message(text, &st), 0);
    assert_int_equal(vdo_status_parse(line, &s), 0);
    vdo_stats_apply_status(&st, &s);

    assert_int_equal(st.data_blocks_used, 22633);
    assert_int_equal(st.overhead_blocks_used, 1049651);
    assert_int_equal(st.logical_blocks_used, 146115);
    assert_int_equal(st.dedupe_advice_valid, 96646);          /* nested: hashLock.* */
    assert_int_equal(st.compressed_fragments_written, 17746); /* nested: packer.* */
    assert_int_equal(st.no_space_errors, 0);
    /* The status line counts data + metadata. */
    assert_int_equal(st.physical_used, st.data_blocks_used + st.overhead_blocks_used);
    /* (146115 - 22633) / 146115 = 84.5 % */
    assert_int_equal(st.saving_percent, 84);
    assert_int_equal(st.index_state, VDO_INDEX_ONLINE);
    assert_false(st.degraded);
    free(text);
    free(line);
}

static void test_stats_read_only(void **state) {
    char *text = sample("stats-written.txt");
    /* The same dump as the kernel writes it in read-only mode. */
    char *p = strstr(text, "mode : normal");
    assert_non_null(p);
    char *ro = NULL;
    assert_true(asprintf(&ro, "%.*smode : read-only%s", (int) (p - text), text, p + strlen("mode : normal")) > 0);
    VdoStats st = {};
    assert_int_equal(vdo_stats_parse_message(ro, &st), 0);
    assert_int_equal(st.mode, VDO_MODE_READ_ONLY);
    assert_true(st.degraded);

    /* the status line wins, and an index in error is degraded too */
    VdoStatus s = {};
    assert_int_equal(vdo_status_parse("/dev/vdb normal - error online 1072284 2097152", &s), 0);
    vdo_stats_apply_status(&st, &s);
    assert_int_equal(st.mode, VDO_MODE_NORMAL);
    assert_true(st.degraded);
    free(ro);
    free(text);
}

static void test_stats_bad(void **state) {
    VdoStats st = { .data_blocks_used = 5 };
    const char *bad[] = {
        "",
        "{",
        "{ }",                                                 /* required keys missing */
        "{ dataBlocksUsed : 1, overheadBlocksUsed : 1, logicalBlocksUsed : 1, physicalBlocks : 9, mode : normal, }",
        "{ dataBlocksUsed : x, overheadBlocksUsed : 1, logicalBlocksUsed : 1, physicalBlocks : 9, logicalBlocks : 9, mode : normal, }",
        "{ dataBlocksUsed : 1, overheadBlocksUsed : 1, logicalBlocksUsed : 1, physicalBlocks : 9, logicalBlocks : 9, mode : weird, }",
        "{ dataBlocksUsed : 1, dataBlocksUsed : 1, overheadBlocksUsed : 1, logicalBlocksUsed : 1, physicalBlocks : 9, logicalBlocks : 9, mode : normal, }",
        "{ dataBlocksUsed : 1, overheadBlocksUsed : 1, logicalBlocksUsed : 10, physicalBlocks : 9, logicalBlocks : 9, mode : normal, }",
        "{ dataBlocksUsed : 5, overheadBlocksUsed : 5, logicalBlocksUsed : 1, physicalBlocks : 9, logicalBlocks : 9, mode : normal, }",
        "{ dataBlocksUsed : 1, overheadBlocksUsed : 1, logicalBlocksUsed : 1, physicalBlocks : 9, logicalBlocks : 9, mode : normal, } trailing",
        "{ a : { b : { c : { d : { e : { f : { g : { h : { i : 1 } } } } } } } } }",
        "{ dataBlocksUsed : 99999999999999999999, overheadBlocksUsed : 1, logicalBlocksUsed : 1, physicalBlocks : 9, logicalBlocks : 9, mode : normal, }",
    };
    for (size_t i = 0; i < ELEMENTSOF(bad); i++)
        assert_int_not_equal(vdo_stats_parse_message(bad[i], &st), 0);
    assert_int_equal(st.data_blocks_used, 5);

    /* minimal, without trailing commas, unknown keys ignored */
    assert_int_equal(vdo_stats_parse_message(
            "{dataBlocksUsed:1,overheadBlocksUsed:1,logicalBlocksUsed:4,physicalBlocks:9,"
            "logicalBlocks:9,mode:recovering,future:{x:1},newCounter:7}", &st), 0);
    assert_int_equal(st.mode, VDO_MODE_RECOVERING);
    assert_int_equal(st.saving_percent, 75);
}

static void test_saving_percent(void **state) {
    assert_int_equal(vdo_stats_saving_percent(0, 0), 0);
    assert_int_equal(vdo_stats_saving_percent(100, 100), 0);
    assert_int_equal(vdo_stats_saving_percent(100, 150), 0); /* metadata-heavy: clamp */
    assert_int_equal(vdo_stats_saving_percent(100, 0), 100);
    assert_int_equal(vdo_stats_saving_percent(100, 25), 75);
    assert_int_equal(vdo_stats_saving_percent(3, 2), 33);
    assert_int_equal(vdo_stats_saving_percent(UINT64_MAX, UINT64_MAX / 2), 50);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_enums),
        cmocka_unit_test(test_status_samples),
        cmocka_unit_test(test_status_bad),
        cmocka_unit_test(test_stats_fresh),
        cmocka_unit_test(test_stats_written),
        cmocka_unit_test(test_stats_read_only),
        cmocka_unit_test(test_stats_bad),
        cmocka_unit_test(test_saving_percent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
