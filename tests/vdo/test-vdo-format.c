/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for the vdoformat argv and output parsers (outputs are real:
 * vdoformat 8.3.0.71 from bookworm-backports, in the tests/vm guest). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include "util.h"
#include "vdoformat.h"

static void test_argv(void **state) {
    char **argv = NULL;
    VdoFormatOptions o = { .logical_size = 20 * GIB };
    assert_int_equal(vdoformat_build_argv("/dev/loop3", 8 * GIB, &o, &argv), 0);
    assert_int_equal(strv_length((const char *const *) argv), 4);
    assert_string_equal(argv[0], "vdoformat");
    assert_string_equal(argv[1], "--logical-size=20971520K");
    assert_string_equal(argv[2], "--slab-bits=17");
    assert_string_equal(argv[3], "/dev/loop3");
    for (char **a = argv; *a; a++)
        assert_null(strstr(*a, "force"));
    strv_free(argv);

    o.slab_bits = 19;
    assert_int_equal(vdoformat_build_argv("/dev/loop3", 8 * GIB, &o, &argv), 0);
    assert_string_equal(argv[2], "--slab-bits=19");
    strv_free(argv);

    argv = NULL;
    o.slab_bits = 24;
    assert_int_equal(vdoformat_build_argv("/dev/loop3", 8 * GIB, &o, &argv), -EINVAL);
    o.slab_bits = 0;
    o.logical_size = 4095;
    assert_int_equal(vdoformat_build_argv("/dev/loop3", 8 * GIB, &o, &argv), -EINVAL);
    o.logical_size = 0;
    assert_int_equal(vdoformat_build_argv("/dev/loop3", 8 * GIB, &o, &argv), -EINVAL);
    o.logical_size = GIB;
    assert_int_equal(vdoformat_build_argv("", 8 * GIB, &o, &argv), -EINVAL);
    assert_null(argv);
}

static void test_slab_bits(void **state) {
    assert_int_equal(vdoformat_choose_slab_bits(5 * GIB), 17);
    assert_int_equal(vdoformat_choose_slab_bits(16 * GIB), 18);
    assert_int_equal(vdoformat_choose_slab_bits(255 * GIB), 18);
    assert_int_equal(vdoformat_choose_slab_bits(TIB), 19);
}

static void test_version(void **state) {
    unsigned v[4];
    assert_int_equal(vdoformat_parse_version("vdoformat version is: 8.3.0.71\n", v), 0);
    assert_int_equal(v[0], 8);
    assert_int_equal(v[1], 3);
    assert_int_equal(v[2], 0);
    assert_int_equal(v[3], 71);
    assert_int_equal(vdoformat_parse_version("vdoformat version is: 6.2\n", v), 0);
    assert_int_equal(v[0], 6);
    assert_int_equal(v[2], 0);
    assert_int_equal(vdoformat_parse_version("vdoformat 8.3\n", v), -EINVAL);
    assert_int_equal(vdoformat_parse_version("vdoformat version is: x\n", v), -EINVAL);
}

static void test_output(void **state) {
    const char *out =
        "The VDO volume can address 4.00 GB in 2 data slabs, each 2.00 GB.\n"
        "It can grow to address at most 16.00 TB of physical storage in 8192 slabs.\n"
        "If a larger maximum size might be needed, use bigger slabs.\n";
    VdoFormatResult r = {};
    assert_int_equal(vdoformat_parse_output(out, &r), 0);
    assert_int_equal(r.slabs, 2);
    assert_int_equal(r.addressable, 4 * GIB);
    assert_int_equal(r.slab_size, 2 * GIB);

    assert_int_equal(vdoformat_parse_output("The VDO volume can address 512.00 MB in 1 data slab, each 512.00 MB.\n", &r), 0);
    assert_int_equal(r.slabs, 1);
    assert_int_equal(r.slab_size, 512 * MIB);

    assert_int_equal(vdoformat_parse_output("vdoformat: Cannot format device\n", &r), -EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_argv),
        cmocka_unit_test(test_slab_bits),
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_output),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
