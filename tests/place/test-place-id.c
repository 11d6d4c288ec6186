/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Workspace id validation: charset, first character, length, traversal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include "layout.h"
#include "place-id.h"

static void test_valid(void **state) {
    const char *ok[] = { "a", "0", "ws-1", "agent-42-build", "9abc", "a-", "a--b" };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        assert_int_equal(place_workspace_id_check(ok[i]), 0);
        assert_true(place_workspace_id_is_valid(ok[i]));
    }
    char max[LAYOUT_WORKSPACE_ID_MAX + 1];
    memset(max, 'a', LAYOUT_WORKSPACE_ID_MAX);
    max[LAYOUT_WORKSPACE_ID_MAX] = 0;
    assert_int_equal(place_workspace_id_check(max), 0);
}

static void test_invalid(void **state) {
    const char *bad[] = { "", ".", "..", "../etc", "a/b", "/abs", "-a", "A", "wS", "a b",
                          "a.b", "a_b", ".hidden", "a\n", "é", "a\\b", "a:b", "a*" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(place_workspace_id_check(bad[i]), -EINVAL);
        assert_false(place_workspace_id_is_valid(bad[i]));
    }
    assert_int_equal(place_workspace_id_check(NULL), -EINVAL);
    char longer[LAYOUT_WORKSPACE_ID_MAX + 2];
    memset(longer, 'a', LAYOUT_WORKSPACE_ID_MAX + 1);
    longer[LAYOUT_WORKSPACE_ID_MAX + 1] = 0;
    assert_int_equal(place_workspace_id_check(longer), -ENAMETOOLONG);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_invalid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
