/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the error code table (api-code.c) and api_fail(). That the
 * table and docs/api.md's "Errors" table list the same (status, code)
 * pairs, and that every row is used, is docs-names' job
 * (tests/docs/docs-names.py).
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "api-code.h"
#include "api-route.h"

/* Every row is complete, and its code fits ApiError.code whole: a
 * truncated code would be a different code to a client. */
static void test_rows(void **state) {
    for (int i = 0; i < _API_CODE_MAX; i++) {
        const ApiCodeSpec *s = &api_codes[i];
        assert_non_null(s->code);
        assert_non_null(s->meaning);
        assert_true(s->code[0]);
        assert_true(strlen(s->code) < sizeof(((ApiError *) NULL)->code));
        assert_int_equal(strspn(s->code, "abcdefghijklmnopqrstuvwxyz_"), strlen(s->code));
        assert_true(s->meaning[0]);
        assert_null(strchr(s->meaning, '\n'));
        assert_in_range(s->status, 400, 599);
        assert_ptr_equal(api_code_spec((ApiCode) i), s);
    }
}

/* A string names one code, so it has one status: clients branch on the
 * string alone. */
static void test_unique(void **state) {
    for (int i = 0; i < _API_CODE_MAX; i++)
        for (int j = i + 1; j < _API_CODE_MAX; j++)
            if (strcmp(api_codes[i].code, api_codes[j].code) == 0)
                fail_msg("code \"%s\" is in the table twice (rows %d and %d)", api_codes[i].code, i, j);
}

/* A value outside the enum is a bug, answered as a well-formed 500. */
static void test_out_of_range(void **state) {
    assert_ptr_equal(api_code_spec(_API_CODE_MAX), &api_codes[API_CODE_INTERNAL]);
    assert_ptr_equal(api_code_spec((ApiCode) -1), &api_codes[API_CODE_INTERNAL]);
    assert_int_equal(api_codes[API_CODE_INTERNAL].status, 500);
    assert_string_equal(api_codes[API_CODE_INTERNAL].code, "internal");
}

static void test_fail(void **state) {
    ApiError e = {};
    assert_int_equal(api_fail(&e, -EBUSY, API_CODE_QUOTA_CHANGING, "changing to %d", 7), -EBUSY);
    assert_int_equal(e.status, 409);
    assert_string_equal(e.code, "quota_changing");
    assert_string_equal(e.message, "changing to 7");
    /* The errno may come either way round; it never picks the status. */
    assert_int_equal(api_fail(&e, EIO, API_CODE_NOT_FOUND, "gone"), -EIO);
    assert_int_equal(e.status, 404);
    assert_string_equal(e.code, "not_found");
    assert_string_equal(e.message, "gone");
    assert_int_equal(api_fail(NULL, -ENOENT, API_CODE_NOT_FOUND, "nobody reads this"), -ENOENT);

    /* _default keeps the first error ... */
    assert_int_equal(api_fail_default(&e, -EEXIST, API_CODE_EXISTS, "exists"), -EEXIST);
    assert_int_equal(e.status, 404);
    assert_string_equal(e.message, "gone");
    /* ... and sets one when there is none. */
    e = (ApiError) {};
    assert_int_equal(api_fail_default(&e, -EEXIST, API_CODE_EXISTS, "ws '%s' exists", "a"), -EEXIST);
    assert_int_equal(e.status, 409);
    assert_string_equal(e.code, "exists");
    assert_string_equal(e.message, "ws 'a' exists");
}

/* The errno table names rows of the code table: a mapped errno answers
 * with exactly a row's status and string. */
static void test_errno_rows(void **state) {
    static const int errnos[] = { ENOENT, EEXIST, EBUSY, EINVAL, E2BIG, EPERM, EACCES, ENOSPC,
                                  EDQUOT, EROFS, EAGAIN, ESHUTDOWN, EOPNOTSUPP, ETIMEDOUT, EIO };
    for (size_t i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++) {
        ApiError e = {};
        api_error_from_errno(&e, -errnos[i]);
        bool found = false;
        for (int c = 0; c < _API_CODE_MAX && !found; c++)
            found = api_codes[c].status == e.status && strcmp(api_codes[c].code, e.code) == 0;
        if (!found)
            fail_msg("errno %d answers %u %s, which is no row of the table", errnos[i], e.status, e.code);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_unique),
        cmocka_unit_test(test_out_of_range),
        cmocka_unit_test(test_fail),
        cmocka_unit_test(test_errno_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
