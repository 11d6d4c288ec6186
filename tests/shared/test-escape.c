/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Terminal escaping: what a label or a message from the API may hold, and
 * what reaches the terminal. Every character class of escape.h, valid and
 * invalid UTF-8, and the JSON filter that keeps the JSON's meaning.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "escape.h"

static void check_escape(const char *in, const char *want) {
    char *got = str_escape_terminal(in);
    assert_non_null(got);
    assert_string_equal(got, want);
    /* The escaped form is always safe. */
    assert_true(str_is_terminal_safe(got));
    free(got);
}

static void test_escape_text(void **state) {
    check_escape("", "");
    check_escape("team=red", "team=red");
    check_escape("caf\xc3\xa9 \xe2\x82\xac", "caf\xc3\xa9 \xe2\x82\xac"); /* é €: printable, kept */
    check_escape("a\x1b[31mred", "a\\x1b[31mred");                       /* ESC */
    check_escape("tab\there\nnl", "tab\\x09here\\x0anl");
    check_escape("del\x7f", "del\\x7f");
    check_escape("c1 \xc2\x9b" "2J", "c1 \\xc2\\x9b2J");                  /* U+009B CSI */
    check_escape("evil\xe2\x80\xaetxt.exe", "evil\\xe2\\x80\\xaetxt.exe"); /* U+202E RLO */
    check_escape("\xe2\x81\xa6iso\xe2\x81\xa9", "\\xe2\\x81\\xa6iso\\xe2\\x81\\xa9"); /* U+2066/2069 */
    check_escape("\xd8\x9c" "alm", "\\xd8\\x9calm");                      /* U+061C */
    check_escape("lrm\xe2\x80\x8e", "lrm\\xe2\\x80\\x8e");                /* U+200E */
    check_escape("bad\xff utf8", "bad\\xff utf8");                       /* invalid byte */
    check_escape("cut\xe2\x82", "cut\\xe2\\x82");                         /* truncated sequence */
    check_escape("over\xc0\xaf", "over\\xc0\\xaf");                       /* overlong '/' */
    check_escape("sur\xed\xa0\x80", "sur\\xed\\xa0\\x80");                /* a surrogate */
    /* A backslash before 'x' is escaped, so "\x1b" in a label reads back
     * as a label that says so, not as ESC; other backslashes stay. */
    check_escape("a\\x1b", "a\\x5cx1b");
    check_escape("C:\\dir", "C:\\dir");
    assert_null(str_escape_terminal(NULL));
}

static void test_safe(void **state) {
    assert_true(str_is_terminal_safe(NULL));
    assert_true(str_is_terminal_safe("ws-1 caf\xc3\xa9"));
    assert_false(str_is_terminal_safe("a\nb"));
    assert_false(str_is_terminal_safe("\xe2\x80\xae"));
    assert_false(str_is_terminal_safe("\xff"));
    assert_true(unichar_is_unsafe(0x85));   /* NEL */
    assert_true(unichar_is_unsafe(0x2029));
    assert_false(unichar_is_unsafe(0xa0));  /* NBSP is printable */
    assert_false(unichar_is_unsafe(0x202f));
}

static void test_decode(void **state) {
    uint32_t c;
    assert_int_equal(utf8_decode("A", 1, &c), 1);
    assert_int_equal(c, 'A');
    assert_int_equal(utf8_decode("\xf0\x9f\x98\x80", 4, &c), 4);
    assert_int_equal(c, 0x1f600);
    assert_int_equal(utf8_decode("\xf0\x9f\x98", 3, &c), -EILSEQ);
    assert_int_equal(utf8_decode("\xf4\x90\x80\x80", 4, &c), -EILSEQ); /* past U+10FFFF */
    assert_int_equal(utf8_decode("\x80", 1, &c), -EILSEQ);
}

static void check_json(const char *in, const char *want) {
    char *got = json_text_make_safe(in);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void test_json(void **state) {
    check_json("{\"a\": 1}\n", "{\"a\": 1}\n");
    check_json("{\"l\": \"x\xe2\x80\xaey\"}", "{\"l\": \"x\\u202ey\"}");
    check_json("{\"l\": \"\xc2\x9b\"}", "{\"l\": \"\\u009b\"}");
    check_json("{\"l\": \"\x1b\x7f\"}", "{\"l\": \"\\u001b\\u007f\"}");
    check_json("{\"l\": \"\xff\"}", "{\"l\": \"\\ufffd\"}");
    check_json("{\"l\": \"caf\xc3\xa9\"}\t\r\n", "{\"l\": \"caf\xc3\xa9\"}\t\r\n");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape_text),
        cmocka_unit_test(test_safe),
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
