/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The cgroup v2 readers on a directory laid out as cgroupfs lays one out
 * (the kernel's formats, Documentation/admin-guide/cgroup-v2.rst), and the
 * scope names. The scopes themselves need systemd: tests/vm 90-systemd-unit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgroup.h"
#include "util.h"

static void put(const char *dir, const char *name, const char *text) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_stats(void **state) {
    char dir[] = "/tmp/test-cgroup.XXXXXX";
    assert_non_null(mkdtemp(dir));
    put(dir, "cpu.stat", "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n");
    put(dir, "memory.current", "104857600\n");
    put(dir, "memory.peak", "209715200\n");
    put(dir, "memory.max", "max\n");
    put(dir, "memory.high", "4294967296\n");
    put(dir, "pids.current", "7\n");
    put(dir, "pids.max", "4096\n");
    put(dir, "io.stat", "7:0 rbytes=1000 wbytes=2000 rios=1 wios=2 dbytes=0 dios=0\n"
                        "7:1 rbytes=10 wbytes=20 rios=1 wios=1 dbytes=0 dios=0\n");
    put(dir, "cpu.pressure", "some avg10=1.50 avg60=0.20 avg300=0.05 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
    put(dir, "memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=42\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
    put(dir, "memory.events", "low 0\nhigh 3\nmax 1\noom 1\noom_kill 1\n");
    CgroupStats s;
    assert_int_equal(cgroup_read_stats(dir, &s), 0);
    assert_int_equal(s.cpu_usec, 2500000);
    assert_int_equal(s.memory_current, 100 * MIB);
    assert_true(s.has_memory_peak);
    assert_int_equal(s.memory_peak, 200 * MIB);
    assert_true(s.memory_max == UINT64_MAX);
    assert_int_equal(s.memory_high, 4 * GIB);
    assert_int_equal(s.pids_current, 7);
    assert_int_equal(s.pids_max, 4096);
    assert_int_equal(s.io_read_bytes, 1010);
    assert_int_equal(s.io_write_bytes, 2020);
    assert_int_equal(s.cpu_pressure_usec, 123456);
    assert_true(s.cpu_pressure_avg10 > 1.49 && s.cpu_pressure_avg10 < 1.51);
    assert_int_equal(s.memory_pressure_usec, 42);
    assert_int_equal(s.io_pressure_usec, 0); /* no io.pressure: 0 */
    assert_int_equal(s.oom_kills, 1);
    const char *files[] = { "cpu.stat", "memory.current", "memory.peak", "memory.max", "memory.high", "pids.current",
                            "pids.max", "io.stat", "cpu.pressure", "memory.pressure", "memory.events" };
    for (size_t i = 0; i < ELEMENTSOF(files); i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        assert_int_equal(unlink(p), 0);
    }
    /* No controller files at all: zeros, not an error. */
    assert_int_equal(cgroup_read_stats(dir, &s), 0);
    assert_int_equal(s.memory_current, 0);
    assert_false(s.has_memory_peak);
    assert_int_equal(rmdir(dir), 0);
    assert_int_equal(cgroup_read_stats(dir, &s), -ENOENT);
}

static void test_names(void **state) {
    _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL;
    assert_int_equal(scope_unit_name("/var/lib/layoutd", "ws-1", &a), 0);
    assert_string_equal(a, "layoutd-ws-ws-1.scope");
    assert_int_equal(scope_unit_name("/srv/other", "ws-1", &b), 0);
    assert_int_equal(strncmp(b, "layoutd-ws-", 11), 0);
    assert_string_not_equal(a, b);
    assert_int_equal(scope_unit_name("/srv/other", "ws-1", &c), 0);
    assert_string_equal(b, c); /* stable */
}

static void test_self(void **state) {
    _cleanup_free_ char *p = NULL;
    int r = cgroup_of_pid(getpid(), &p);
    /* Every kernel with cgroup2 mounted anywhere has the 0:: line. */
    if (r == 0)
        assert_int_equal(strncmp(p, CGROUP_ROOT, strlen(CGROUP_ROOT)), 0);
    else
        assert_int_equal(r, -ENOENT);
    assert_int_equal(cgroup_of_pid(999999999, &p), -ENOENT);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stats),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_self),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
