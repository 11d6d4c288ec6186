/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of the pure parts of the device layer (no root, no devices):
 * mkfs argv building, sysfs number parsing, the child runner, the udev
 * decision override. */

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "dev-util.h"
#include "fs-errors.h"
#include "mkfs.h"
#include "udev.h"
#include "util.h"

static void assert_argv(char **got, const char *const *want) {
    size_t i = 0;
    for (; want[i]; i++) {
        assert_non_null(got[i]);
        assert_string_equal(got[i], want[i]);
    }
    assert_null(got[i]);
}

static void test_argv_ext4(void **state) {
    char **argv = NULL;
    char *extra[] = { "-O", "^has_journal", "-m", "0", NULL };
    assert_int_equal(mkfs_build_argv("ext4", "/dev/loop3", "state-0", "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b",
                                     extra, &argv), 0);
    const char *const want[] = { "mkfs.ext4", "-q", "-E", "nodiscard,lazy_itable_init=0,lazy_journal_init=0",
                                 "-m", "0", "-L", "state-0", "-U", "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b",
                                 "-O", "^has_journal", "-m", "0", "/dev/loop3", NULL };
    assert_argv(argv, want);
    strv_free(argv);

    /* No label, no uuid, no extras. */
    assert_int_equal(mkfs_build_argv("ext4", "/dev/loop0", NULL, NULL, NULL, &argv), 0);
    const char *const want2[] = { "mkfs.ext4", "-q", "-E", "nodiscard,lazy_itable_init=0,lazy_journal_init=0",
                                  "-m", "0", "/dev/loop0", NULL };
    assert_argv(argv, want2);
    strv_free(argv);
}

static void test_argv_prezeroed(void **state) {
    char **argv = NULL;
    assert_int_equal(mkfs_build_argv_prezeroed("ext4", "/dev/loop3", "state-0", NULL, NULL, &argv), 0);
    const char *const want[] = { "mkfs.ext4", "-q", "-E", "nodiscard,assume_storage_prezeroed=1",
                                 "-m", "0", "-L", "state-0", "/dev/loop3", NULL };
    assert_argv(argv, want);
    strv_free(argv);
    assert_int_equal(mkfs_build_argv_prezeroed("xfs", "/dev/loop3", NULL, NULL, NULL, &argv), 0);
    assert_argv(argv, (const char *const[]) { "mkfs.xfs", "-q", "-K", "/dev/loop3", NULL });
    strv_free(argv);
    char *f[] = { "-F", NULL };
    assert_int_equal(mkfs_build_argv_prezeroed("ext4", "/dev/loop3", NULL, NULL, f, &argv), -EINVAL);
}

static void test_argv_xfs(void **state) {
    char **argv = NULL;
    assert_int_equal(mkfs_build_argv("xfs", "/dev/loop1", "content-0", "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d",
                                     NULL, &argv), 0);
    const char *const want[] = { "mkfs.xfs", "-q", "-K", "-L", "content-0", "-m",
                                 "uuid=9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d", "/dev/loop1", NULL };
    assert_argv(argv, want);
    strv_free(argv);
}

static void test_argv_btrfs(void **state) {
    char **argv = NULL;
    assert_int_equal(mkfs_build_argv("btrfs", "/dev/loop4", "ld-state-0", "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b",
                                     NULL, &argv), 0);
    const char *const want[] = { "mkfs.btrfs", "-q", "-K", "-L", "ld-state-0", "-U",
                                 "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b", "/dev/loop4", NULL };
    assert_argv(argv, want);
    strv_free(argv);
    /* No zeroing to skip: the same argv. */
    assert_int_equal(mkfs_build_argv_prezeroed("btrfs", "/dev/loop4", NULL, NULL, NULL, &argv), 0);
    assert_argv(argv, (const char *const[]) { "mkfs.btrfs", "-q", "-K", "/dev/loop4", NULL });
    strv_free(argv);
    /* Labels up to 255 bytes. */
    char label[257];
    memset(label, 'a', 256);
    label[256] = 0;
    assert_int_equal(mkfs_build_argv("btrfs", "/dev/loop4", label, NULL, NULL, &argv), -EINVAL);
    label[255] = 0;
    assert_int_equal(mkfs_build_argv("btrfs", "/dev/loop4", label, NULL, NULL, &argv), 0);
    strv_free(argv);

    /* mkfs.btrfs has long options: allowed, but never the force one, nor a
     * prefix getopt_long would take for it. */
    char *ok1[] = { "--csum", "xxhash", "-O", "quota", NULL };
    char *ok2[] = { "--nodiscard", "--features=quota", NULL };
    assert_int_equal(mkfs_build_argv("btrfs", "/dev/loop4", NULL, NULL, ok1, &argv), 0);
    strv_free(argv);
    assert_int_equal(mkfs_build_argv("btrfs", "/dev/loop4", NULL, NULL, ok2, &argv), 0);
    strv_free(argv);
    char *f1[] = { "--force", NULL };
    char *f2[] = { "--fo", NULL };
    char *f3[] = { "-f", NULL };
    char *f4[] = { "-qf", NULL };
    char *f5[] = { "--", NULL };
    argv = (char **) 0x1;
    assert_int_equal(mkfs_build_argv("btrfs", "/dev/loop4", NULL, NULL, f1, &argv), -EINVAL);
    assert_int_equal(mkfs_build_argv("btrfs", "/dev/loop4", NULL, NULL, f2, &argv), -EINVAL);
    assert_int_equal(mkfs_build_argv("btrfs", "/dev/loop4", NULL, NULL, f3, &argv), -EINVAL);
    assert_int_equal(mkfs_build_argv("btrfs", "/dev/loop4", NULL, NULL, f4, &argv), -EINVAL);
    assert_int_equal(mkfs_build_argv("btrfs", "/dev/loop4", NULL, NULL, f5, &argv), -EINVAL);
    assert_ptr_equal(argv, (char **) 0x1);
    /* -L takes the next argument: "-f" there is a label. */
    char *ok3[] = { "-L", "-f", NULL };
    assert_int_equal(mkfs_build_argv("btrfs", "/dev/loop4", NULL, NULL, ok3, &argv), 0);
    strv_free(argv);
}

static void test_fs_errors_parse(void **state) {
    uint64_t v = 99;
    assert_int_equal(fs_errors_parse_sum("write_errs 0\nread_errs 2\nflush_errs 0\ncorruption_errs 3\n"
                                         "generation_errs 0\n", &v), 0);
    assert_int_equal(v, 5);
    assert_int_equal(fs_errors_parse_sum("", &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(fs_errors_parse_sum("write_errs x\n", &v), -EINVAL);
    assert_int_equal(fs_errors_parse_sum("write_errs\n", &v), -EINVAL);
    /* XFS keeps no counter. */
    assert_int_equal(fs_errors_read(fs_type_find("xfs"), 0, NULL, &v), -EOPNOTSUPP);
    /* {uuid} goes into a path: only hex digits and dashes. */
    assert_int_equal(fs_errors_read(fs_type_find("btrfs"), 0, "../../x", &v), -EINVAL);
    assert_int_equal(fs_errors_read(fs_type_find("btrfs"), 0, NULL, &v), -EINVAL);
}

static void test_argv_never_force(void **state) {
    char **argv = (char **) 0x1; /* must stay untouched on error */
    char *f1[] = { "-F", NULL };
    char *f2[] = { "-qF", NULL };
    char *f3[] = { "-m", "0", "-F", NULL };
    char *x1[] = { "-f", NULL };
    char *x2[] = { "-Kf", NULL };
    char *lng[] = { "--force", NULL };
    assert_int_equal(mkfs_build_argv("ext4", "/dev/loop0", NULL, NULL, f1, &argv), -EINVAL);
    assert_int_equal(mkfs_build_argv("ext4", "/dev/loop0", NULL, NULL, f2, &argv), -EINVAL);
    assert_int_equal(mkfs_build_argv("ext4", "/dev/loop0", NULL, NULL, f3, &argv), -EINVAL);
    assert_int_equal(mkfs_build_argv("xfs", "/dev/loop0", NULL, NULL, x1, &argv), -EINVAL);
    assert_int_equal(mkfs_build_argv("xfs", "/dev/loop0", NULL, NULL, x2, &argv), -EINVAL);
    assert_int_equal(mkfs_build_argv("xfs", "/dev/loop0", NULL, NULL, lng, &argv), -EINVAL);
    assert_ptr_equal(argv, (char **) 0x1);

    /* "-F" as the argument of an option is a value, not the flag. */
    char *ok1[] = { "-E", "-F", NULL };      /* ext4 -E takes an argument */
    char *ok2[] = { "-Lfoo", NULL };         /* joined argument */
    char *ok3[] = { "-d", "su=64k,sw=2", NULL }; /* xfs -d takes one, 'f' is not there anyway */
    char *ok4[] = { "-dsunit=8", NULL };     /* "-d<arg>": the f-less cluster stops at d */
    assert_int_equal(mkfs_build_argv("ext4", "/dev/loop0", NULL, NULL, ok1, &argv), 0);
    strv_free(argv);
    assert_int_equal(mkfs_build_argv("xfs", "/dev/loop0", NULL, NULL, ok2, &argv), 0);
    strv_free(argv);
    assert_int_equal(mkfs_build_argv("xfs", "/dev/loop0", NULL, NULL, ok3, &argv), 0);
    strv_free(argv);
    assert_int_equal(mkfs_build_argv("xfs", "/dev/loop0", NULL, NULL, ok4, &argv), 0);
    strv_free(argv);
    /* xfs: 'f' after an argument-taking letter is part of its argument. */
    char *ok5[] = { "-Lfast", NULL };
    assert_int_equal(mkfs_build_argv("xfs", "/dev/loop0", NULL, NULL, ok5, &argv), 0);
    strv_free(argv);
}

static void test_argv_invalid(void **state) {
    char **argv = NULL;
    assert_int_equal(mkfs_build_argv("zfs", "/dev/loop0", NULL, NULL, NULL, &argv), -EINVAL);
    assert_int_equal(mkfs_build_argv(NULL, "/dev/loop0", NULL, NULL, NULL, &argv), -EINVAL);
    assert_int_equal(mkfs_build_argv("ext4", "", NULL, NULL, NULL, &argv), -EINVAL);
    assert_int_equal(mkfs_build_argv("ext4", NULL, NULL, NULL, NULL, &argv), -EINVAL);
    /* Label limits: ext4 16 bytes, xfs 12. */
    assert_int_equal(mkfs_build_argv("ext4", "/dev/loop0", "0123456789abcdef", NULL, NULL, &argv), 0);
    strv_free(argv);
    assert_int_equal(mkfs_build_argv("ext4", "/dev/loop0", "0123456789abcdefg", NULL, NULL, &argv), -EINVAL);
    assert_int_equal(mkfs_build_argv("xfs", "/dev/loop0", "0123456789ab", NULL, NULL, &argv), 0);
    strv_free(argv);
    assert_int_equal(mkfs_build_argv("xfs", "/dev/loop0", "0123456789abc", NULL, NULL, &argv), -EINVAL);
    assert_int_equal(mkfs_build_argv("xfs", "/dev/loop0", "", NULL, NULL, &argv), -EINVAL);
    /* UUID format. */
    assert_int_equal(mkfs_build_argv("ext4", "/dev/loop0", NULL, "not-a-uuid", NULL, &argv), -EINVAL);
    assert_int_equal(mkfs_build_argv("ext4", "/dev/loop0", NULL, "3f2a1b4c5d6e-4f70-8a9b-0c1d2e3f4a5b-", NULL, &argv), -EINVAL);
    assert_int_equal(mkfs_build_argv("ext4", "/dev/loop0", NULL, "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5g", NULL, &argv), -EINVAL);
}

static void test_grow_argv(void **state) {
    char **argv = NULL;
    assert_int_equal(mkfs_grow_argv("ext4", "/dev/loop2", "/srv/v", &argv), 0);
    assert_argv(argv, (const char *const[]) { "resize2fs", "/dev/loop2", NULL });
    strv_free(argv);
    assert_int_equal(mkfs_grow_argv("xfs", "/dev/loop2", "/srv/v", &argv), 0);
    assert_argv(argv, (const char *const[]) { "xfs_growfs", "/srv/v", NULL });
    strv_free(argv);
    assert_int_equal(mkfs_grow_argv("btrfs", "/dev/loop2", "/srv/v", &argv), 0);
    assert_argv(argv, (const char *const[]) { "btrfs", "filesystem", "resize", "max", "/srv/v", NULL });
    strv_free(argv);
    assert_int_equal(mkfs_grow_argv("btrfs", "/dev/loop2", NULL, &argv), -EINVAL);
    assert_int_equal(mkfs_grow_argv("xfs", "/dev/loop2", NULL, &argv), -EINVAL);
    assert_int_equal(mkfs_grow_argv("ext4", NULL, "/srv/v", &argv), -EINVAL);
    assert_int_equal(mkfs_grow_argv("vfat", "/dev/x", "/srv/v", &argv), -EINVAL);
    assert_string_equal(mkfs_program("xfs"), "mkfs.xfs");
    assert_null(mkfs_program("zfs"));
}

static void test_parse_u64(void **state) {
    uint64_t v = 0;
    assert_int_equal(dev_parse_u64("4096\n", &v), 0);
    assert_int_equal(v, 4096);
    assert_int_equal(dev_parse_u64("  0 ", &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(dev_parse_u64("18446744073709551615", &v), 0);
    assert_true(v == UINT64_MAX);
    assert_int_equal(dev_parse_u64("18446744073709551616", &v), -ERANGE);
    assert_int_equal(dev_parse_u64("-1", &v), -EINVAL);
    assert_int_equal(dev_parse_u64("", &v), -EINVAL);
    assert_int_equal(dev_parse_u64("12k", &v), -EINVAL);
    assert_int_equal(dev_parse_u64("1 2", &v), -EINVAL);
    assert_int_equal(dev_parse_u64(NULL, &v), -EINVAL);
}

static void test_run_program(void **state) {
    char *out = NULL;
    int status = -1;

    /* Clean environment, exactly. */
    setenv("LAYOUTD_LEAK", "yes", 1);
    char *env[] = { "env", NULL };
    assert_int_equal(dev_run_program(env, &out, &status), 0);
    assert_string_equal(out, "PATH=/usr/sbin:/usr/bin:/sbin:/bin\nLC_ALL=C\n");
    assert_int_equal(status, 0);
    free(out);

    /* stdin is /dev/null; stderr is captured with stdout. */
    char *sh[] = { "sh", "-c", "cat; echo out; echo err >&2; readlink /proc/self/fd/0", NULL };
    assert_int_equal(dev_run_program(sh, &out, NULL), 0);
    assert_string_equal(out, "out\nerr\n/dev/null\n");
    free(out);

    /* No inherited fds beyond 0-2 (a leaked non-CLOEXEC fd must not
     * reach the child). */
    int leak = open("/dev/null", O_RDONLY); /* deliberately without O_CLOEXEC */
    assert_true(leak > 2);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "readlink /proc/$$/fd/%d || echo closed", leak);
    char *fds[] = { "sh", "-c", cmd, NULL };
    assert_int_equal(dev_run_program(fds, &out, NULL), 0);
    assert_string_equal(out, "closed\n");
    free(out);
    close(leak);

    /* Non-zero exit: -EPROTO, output and status still given. */
    char *fail[] = { "sh", "-c", "echo boom; exit 3", NULL };
    assert_int_equal(dev_run_program(fail, &out, &status), -EPROTO);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 3);
    assert_string_equal(out, "boom\n");
    free(out);

    /* Killed by a signal: -EPROTO too. */
    char *kill[] = { "sh", "-c", "kill -9 $$", NULL };
    assert_int_equal(dev_run_program(kill, &out, &status), -EPROTO);
    assert_true(WIFSIGNALED(status));
    free(out);

    /* Missing program: -ENOENT, before any fork. */
    char *missing[] = { "layoutd-no-such-program", NULL };
    assert_int_equal(dev_run_program(missing, &out, &status), -ENOENT);
    char *missing2[] = { "/nonexistent/bin/x", NULL };
    assert_int_equal(dev_run_program(missing2, NULL, NULL), -ENOENT);

    /* Output is capped (64 KiB) and the child is drained, not blocked. */
    char *big[] = { "sh", "-c", "head -c 1000000 /dev/zero | tr '\\0' a; echo done >&2", NULL };
    assert_int_equal(dev_run_program(big, &out, NULL), 0);
    assert_true(strlen(out) < 70 * 1024);
    assert_non_null(strstr(out, "[output truncated]"));
    free(out);
}

static void test_udev_override(void **state) {
    setenv("LAYOUTD_UDEV", "1", 1);
    assert_true(udev_is_running());
    setenv("LAYOUTD_UDEV", "0", 1);
    assert_false(udev_is_running());
    unsetenv("LAYOUTD_UDEV");
    assert_int_equal(udev_is_running(), access("/run/udev/control", F_OK) == 0);
    assert_int_equal(udev_wait_for_device(0, NULL, 0), -EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_argv_ext4),       cmocka_unit_test(test_argv_xfs), cmocka_unit_test(test_argv_prezeroed),
        cmocka_unit_test(test_argv_btrfs),       cmocka_unit_test(test_fs_errors_parse),
        cmocka_unit_test(test_argv_never_force), cmocka_unit_test(test_argv_invalid),
        cmocka_unit_test(test_grow_argv),       cmocka_unit_test(test_parse_u64),
        cmocka_unit_test(test_run_program),     cmocka_unit_test(test_udev_override),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
