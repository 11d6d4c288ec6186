/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for the dm-vdo table builder: exact lines, ranges refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include "vdo-table.h"

static VdoTable base(void) {
    return (VdoTable) {
        .logical_size = 10 * GIB,
        .storage_device = (char *) "/dev/vdb",
        .storage_size = 5 * GIB,
        .minimum_io_size = 4096,
        .block_map_cache = 128 * MIB,
        .block_map_era = 16380,
        .deduplication = true,
        .compression = true,
    };
}

static void test_line_example(void **state) {
    VdoTable t = base();
    char *line = NULL;
    assert_int_equal(vdo_table_line(&t, &line), 0);
    assert_string_equal(line, "0 20971520 vdo V4 /dev/vdb 1310720 4096 32768 16380 deduplication on compression on");
    free(line);

    char *params = NULL;
    assert_int_equal(vdo_table_params(&t, &params), 0);
    assert_string_equal(params, "V4 /dev/vdb 1310720 4096 32768 16380 deduplication on compression on");
    free(params);
    assert_int_equal(vdo_table_logical_sectors(&t), 20971520);
}

static void test_switches_and_defaults(void **state) {
    VdoTable t = base();
    t.deduplication = false;
    t.compression = false;
    t.minimum_io_size = 512;
    t.block_map_era = 0; /* 0 = the maximum */
    t.storage_size = 5 * GIB + 4095; /* a partial block does not count */
    t.storage_device = (char *) "7:3";
    char *line = NULL;
    assert_int_equal(vdo_table_line(&t, &line), 0);
    assert_string_equal(line, "0 20971520 vdo V4 7:3 1310720 512 32768 16380 deduplication off compression off");
    free(line);
}

static void expect_invalid(VdoTable t, const char *substr) {
    const char *why = NULL;
    char *line = NULL;
    assert_int_equal(vdo_table_validate(&t, &why), -EINVAL);
    assert_non_null(why);
    assert_non_null(strstr(why, substr));
    assert_int_equal(vdo_table_line(&t, &line), -EINVAL);
    assert_null(line);
}

static void test_ranges(void **state) {
    VdoTable t;

    t = base(); t.logical_size = 0;                  expect_invalid(t, "logical size");
    t = base(); t.logical_size = 10 * GIB + 512;     expect_invalid(t, "logical size");
    t = base(); t.logical_size = 5ULL * 1024 * TIB;  expect_invalid(t, "4 PiB");
    t = base(); t.storage_size = 4095;               expect_invalid(t, "smaller");
    t = base(); t.storage_size = 257 * TIB;          expect_invalid(t, "256 TiB");
    t = base(); t.minimum_io_size = 1024;            expect_invalid(t, "512 or 4096");
    t = base(); t.block_map_cache = 128 * MIB - 4096; expect_invalid(t, "128 MiB");
    t = base(); t.block_map_cache = 128 * MIB + 1;   expect_invalid(t, "multiple of 4096");
    t = base(); t.block_map_era = 16381;             expect_invalid(t, "16380");
    t = base(); t.storage_device = NULL;             expect_invalid(t, "storage device");
    t = base(); t.storage_device = (char *) "";      expect_invalid(t, "storage device");
    t = base(); t.storage_device = (char *) "/dev/my disk"; expect_invalid(t, "whitespace");

    /* the edges that are fine */
    t = base(); t.logical_size = 4 * 1024 * TIB; t.block_map_era = 1;
    assert_int_equal(vdo_table_validate(&t, NULL), 0);
    t = base(); t.block_map_cache = 32768 * 4096ULL;
    assert_int_equal(vdo_table_validate(&t, NULL), 0);
}

static void test_from_pool(void **state) {
    Pool p = {
        .role = POOL_CONTENT,
        .declared = true,
        .backend = BACKEND_VDO_XFS,
        .volume_size = 8 * GIB,
        .has_vdo = true,
        .vdo = {
            .logical_size = 40 * GIB,
            .compression = false,
            .deduplication = true,
            .block_map_cache = 256 * MIB,
        },
    };
    VdoTable t = {};
    assert_int_equal(vdo_table_from_pool(&p, "/dev/loop7", 8 * GIB, 4096, &t), 0);
    char *line = NULL;
    assert_int_equal(vdo_table_line(&t, &line), 0);
    assert_string_equal(line, "0 83886080 vdo V4 /dev/loop7 2097152 4096 65536 16380 deduplication on compression off");
    free(line);

    /* not a vdo pool */
    p.backend = BACKEND_LOOP_XFS;
    assert_int_equal(vdo_table_from_pool(&p, "/dev/loop7", 8 * GIB, 4096, &t), -EINVAL);
    p.backend = BACKEND_VDO_XFS;
    p.has_vdo = false;
    assert_int_equal(vdo_table_from_pool(&p, "/dev/loop7", 8 * GIB, 4096, &t), -EINVAL);
    /* a 512-byte logical block loop device */
    p.has_vdo = true;
    assert_int_equal(vdo_table_from_pool(&p, "/dev/loop7", 8 * GIB, 512, &t), 0);
    assert_int_equal(t.minimum_io_size, 512);
    assert_int_equal(vdo_table_from_pool(&p, "/dev/loop7", 8 * GIB, 2048, &t), -EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_line_example),
        cmocka_unit_test(test_switches_and_defaults),
        cmocka_unit_test(test_ranges),
        cmocka_unit_test(test_from_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
