/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for src/engine/child.c on real processes: a child freed while
 * it runs is killed and reaped by the loop later (the agent once aborted
 * there: issue "Nothing lost, nothing crashed", defect 5), and a child
 * freed from inside its own callbacks is released once they return. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "child.h"

typedef struct Seen {
    Child *child;
    int lines, exits, status;
    bool free_on_line, free_on_exit;
} Seen;

static void on_line(Child *c, const char *line, void *userdata) {
    Seen *s = userdata;
    s->lines++;
    if (s->free_on_line)
        s->child = child_free(c);
}

static void on_exit_cb(Child *c, int status, const char *err, void *userdata) {
    Seen *s = userdata;
    s->exits++;
    s->status = status;
    if (s->free_on_exit)
        s->child = child_free(c);
}

static const ChildCallbacks callbacks = { .on_line = on_line, .on_exit = on_exit_cb };

static sd_event *new_event(void) {
    sigset_t ss;
    sigemptyset(&ss);
    sigaddset(&ss, SIGCHLD);
    assert_int_equal(sigprocmask(SIG_BLOCK, &ss, NULL), 0);
    sd_event *e = NULL;
    assert_int_equal(sd_event_new(&e), 0);
    return e;
}

/* Runs the loop until cond(arg) holds, at most ~10 s. */
static bool run_until(sd_event *e, bool (*cond)(void *), void *arg) {
    for (int i = 0; i < 1000; i++) {
        if (cond(arg))
            return true;
        assert_true(sd_event_run(e, 10 * 1000) >= 0);
    }
    return cond(arg);
}

static bool no_orphans(void *arg) {
    return child_orphans_count() == 0;
}

static bool exited(void *arg) {
    return ((Seen *) arg)->exits > 0;
}

static bool gone(pid_t pid) {
    /* Reaped: neither a process nor a zombie of ours. */
    return waitpid(pid, NULL, WNOHANG) < 0 && errno == ECHILD;
}

static void test_free_running(void **state) {
    sd_event *e = new_event();
    char *argv[] = { "/bin/sleep", "60", NULL };
    Seen s = {};
    Child *c = NULL;
    assert_int_equal(child_spawn(e, argv, &callbacks, &s, &c), 0);
    pid_t pid = child_pid(c);
    assert_true(pid > 0);
    assert_null(child_free(c));
    assert_int_equal(child_orphans_count(), 1);
    /* The loop reaps it; this aborted in sd-event before (a floating
     * source freed from its own callback). */
    assert_true(run_until(e, no_orphans, NULL));
    assert_true(gone(pid));
    assert_int_equal(s.exits, 0); /* its owner is not called back */
    sd_event_unref(e);
}

static void test_free_many_running(void **state) {
    sd_event *e = new_event();
    char *argv[] = { "/bin/sh", "-c", "trap '' TERM; echo hi; exec sleep 60", NULL };
    pid_t pids[16];
    Seen s = {};
    for (int i = 0; i < 16; i++) {
        Child *c = NULL;
        assert_int_equal(child_spawn(e, argv, &callbacks, &s, &c), 0);
        pids[i] = child_pid(c);
        (void) sd_event_run(e, 0);
        child_free(c);
    }
    assert_true(run_until(e, no_orphans, NULL));
    for (int i = 0; i < 16; i++)
        assert_true(gone(pids[i]));
    sd_event_unref(e);
}

static void test_free_from_on_line(void **state) {
    sd_event *e = new_event();
    /* Many lines in one read: freeing after the first must stop the rest. */
    char *argv[] = { "/bin/sh", "-c", "for i in 1 2 3 4 5 6 7 8; do echo line $i; done; exec sleep 60", NULL };
    Seen s = { .free_on_line = true };
    assert_int_equal(child_spawn(e, argv, &callbacks, &s, &s.child), 0);
    pid_t pid = child_pid(s.child);
    for (int i = 0; i < 1000 && s.child; i++)
        assert_true(sd_event_run(e, 10 * 1000) >= 0);
    assert_null(s.child);
    assert_int_equal(s.lines, 1);
    assert_true(run_until(e, no_orphans, NULL));
    assert_true(gone(pid));
    sd_event_unref(e);
}

static void test_free_from_on_exit(void **state) {
    sd_event *e = new_event();
    char *argv[] = { "/bin/sh", "-c", "echo last-without-newline | tr -d '\\n'; exit 3", NULL };
    Seen s = { .free_on_exit = true };
    assert_int_equal(child_spawn(e, argv, &callbacks, &s, &s.child), 0);
    assert_true(run_until(e, exited, &s));
    assert_null(s.child);
    assert_int_equal(s.status, 3);
    assert_int_equal(s.lines, 1); /* the last line without its newline */
    assert_int_equal(child_orphans_count(), 0);
    sd_event_unref(e);
}

static void test_orphans_free_at_exit(void **state) {
    sd_event *e = new_event();
    char *argv[] = { "/bin/sleep", "60", NULL };
    Child *c = NULL;
    assert_int_equal(child_spawn(e, argv, &callbacks, NULL, &c), 0);
    pid_t pid = child_pid(c);
    child_free(c);
    assert_int_equal(child_orphans_count(), 1);
    /* The agent exits without another loop iteration: nothing leaks
     * (LeakSanitizer checks under tests/run's ASan pass). */
    child_orphans_free();
    assert_int_equal(child_orphans_count(), 0);
    (void) waitpid(pid, NULL, 0); /* killed: this returns at once */
    sd_event_unref(e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_free_running),
        cmocka_unit_test(test_free_many_running),
        cmocka_unit_test(test_free_from_on_line),
        cmocka_unit_test(test_free_from_on_exit),
        cmocka_unit_test(test_orphans_free_at_exit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
