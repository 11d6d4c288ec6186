/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for the agent's record writer thread (agent/daemon/agent-record-saver.c),
 * on real files: order, coalescing, durability as seen from the callback,
 * waiting from a callback, failure and retry, cancel, free. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent-record-saver.h"
#include "state.h"
#include "util.h"

typedef struct Fixture {
    char dir[64];
    char path[128];
    sd_event *event;
    RecordSaver *saver;
    StateRecord *record;
} Fixture;

static int setup(void **state) {
    Fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "/tmp/layoutd-test-saver.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/state.json", f->dir);
    assert_int_equal(sd_event_new(&f->event), 0);
    assert_int_equal(record_saver_new(f->event, f->path, &f->saver), 0);
    assert_int_equal(state_record_new(&f->record), 0);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    Fixture *f = *state;
    record_saver_free(f->saver);
    state_record_free(f->record);
    sd_event_unref(f->event);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

typedef struct Done {
    int calls;
    int error;
} Done;

static void on_done(int error, void *userdata) {
    Done *d = userdata;
    d->calls++;
    d->error = error;
}

/* Runs the loop until d has been called (or 10 s pass). */
static void run_until(Fixture *f, const Done *d) {
    for (int i = 0; i < 1000 && !d->calls; i++)
        assert_true(sd_event_run(f->event, 10 * USEC_PER_MSEC) >= 0);
    assert_int_equal(d->calls, 1);
}

static uint64_t file_generation(const char *path) {
    StateRecord *r = NULL;
    assert_int_equal(state_record_load(path, &r), 0);
    uint64_t g = r->generation;
    state_record_free(r);
    return g;
}

static void add_workspace(StateRecord *s, unsigned i) {
    char id[32];
    snprintf(id, sizeof id, "ws-%u", i);
    WorkspaceRecord w = { .id = id, .volume = (char *) "state-0", .state_dir = (char *) "/x", .active = true };
    WorkspaceRecord *kept = NULL;
    assert_int_equal(state_record_add_workspace(s, &w, &kept), 0);
}

/* Many snapshots in a burst (one per loop iteration): the last one
 * lands, nothing older after it, and every snapshot is either written or
 * replaced by a newer one. */
static void test_burst_lands_newest(void **state) {
    Fixture *f = *state;
    for (unsigned i = 0; i < 200; i++) {
        add_workspace(f->record, i);
        assert_int_equal(record_saver_submit(f->saver, f->record), 0);
        assert_true(sd_event_run(f->event, 0) >= 0); /* the snapshot */
    }
    assert_int_equal(f->record->generation, 200);
    Done d = {};
    assert_int_equal(record_saver_wait(f->saver, on_done, &d, NULL), 0);
    run_until(f, &d);
    assert_int_equal(d.error, 0);
    assert_true(record_saver_idle(f->saver));
    assert_int_equal(file_generation(f->path), 200);
    StateRecord *r = NULL;
    assert_int_equal(state_record_load(f->path, &r), 0);
    assert_int_equal(r->n_workspaces, 200);
    state_record_free(r);
    RecordSaverStats st;
    record_saver_stats(f->saver, &st);
    assert_int_equal(st.writes + st.coalesced, 200);
    assert_int_equal(st.failures, 0);
    assert_true(st.writes >= 1);
}

/* The saves of one loop iteration make one snapshot, holding them all. */
static void test_one_snapshot_per_iteration(void **state) {
    Fixture *f = *state;
    for (unsigned i = 0; i < 10; i++) {
        add_workspace(f->record, i);
        assert_int_equal(record_saver_submit(f->saver, f->record), 0);
    }
    assert_false(record_saver_idle(f->saver));
    Done d = {};
    assert_int_equal(record_saver_wait(f->saver, on_done, &d, NULL), 0);
    run_until(f, &d);
    assert_int_equal(d.error, 0);
    assert_int_equal(f->record->generation, 1);
    StateRecord *r = NULL;
    assert_int_equal(state_record_load(f->path, &r), 0);
    assert_int_equal(r->n_workspaces, 10);
    state_record_free(r);
    RecordSaverStats st;
    record_saver_stats(f->saver, &st);
    assert_int_equal(st.writes, 1);
}

/* "Durable" means on disk: the callback finds the change in the file,
 * also when it was submitted while an older write was still going. */
typedef struct Check {
    const char *path;
    size_t want;
    int calls;
    int error;
    size_t found;
} Check;

static void on_check(int error, void *userdata) {
    Check *c = userdata;
    c->calls++;
    c->error = error;
    StateRecord *r = NULL;
    if (state_record_load(c->path, &r) == 0)
        c->found = r->n_workspaces;
    state_record_free(r);
}

static void test_durable_in_the_callback(void **state) {
    Fixture *f = *state;
    for (unsigned round = 0; round < 20; round++) {
        add_workspace(f->record, 2 * round);
        assert_int_equal(record_saver_submit(f->saver, f->record), 0);
        assert_true(sd_event_run(f->event, 0) >= 0); /* that snapshot goes to the thread */
        add_workspace(f->record, 2 * round + 1);
        assert_int_equal(record_saver_submit(f->saver, f->record), 0);
        Check c = { .path = f->path, .want = 2 * round + 2 };
        assert_int_equal(record_saver_wait(f->saver, on_check, &c, NULL), 0);
        for (int i = 0; i < 1000 && !c.calls; i++)
            assert_true(sd_event_run(f->event, 10 * USEC_PER_MSEC) >= 0);
        assert_int_equal(c.calls, 1);
        assert_int_equal(c.error, 0);
        assert_int_equal(c.found, c.want);
    }
}

/* A callback may submit and wait again: the second wait is answered
 * after its own write, from a later dispatch. */
typedef struct Chain {
    Fixture *f;
    Done second;
    int first_calls;
} Chain;

static void on_first(int error, void *userdata) {
    Chain *c = userdata;
    assert_int_equal(error, 0);
    c->first_calls++;
    add_workspace(c->f->record, 99);
    assert_int_equal(record_saver_submit(c->f->saver, c->f->record), 0);
    assert_int_equal(record_saver_wait(c->f->saver, on_done, &c->second, NULL), 0);
    assert_int_equal(c->second.calls, 0);
}

static void test_wait_from_a_callback(void **state) {
    Fixture *f = *state;
    Chain c = { .f = f };
    assert_int_equal(record_saver_submit(f->saver, f->record), 0);
    assert_int_equal(record_saver_wait(f->saver, on_first, &c, NULL), 0);
    run_until(f, &c.second);
    assert_int_equal(c.first_calls, 1);
    assert_int_equal(c.second.error, 0);
    assert_int_equal(file_generation(f->path), 2);
}

/* A saver whose record lives in f->dir/NAME, which does not exist yet:
 * its first write fails with ENOENT (checked). mkdir f->dir/NAME fixes it. */
static RecordSaver *failing_saver(Fixture *f, const char *name) {
    char path[192];
    snprintf(path, sizeof path, "%s/%s/state.json", f->dir, name);
    RecordSaver *s = NULL;
    assert_int_equal(record_saver_new(f->event, path, &s), 0);
    assert_int_equal(record_saver_submit(s, f->record), 0);
    Done d = {};
    assert_int_equal(record_saver_wait(s, on_done, &d, NULL), 0);
    run_until(f, &d);
    assert_int_equal(d.error, -ENOENT);
    assert_int_equal(record_saver_last_error(s), -ENOENT);
    return s;
}

static void make_subdir(Fixture *f, const char *name) {
    char path[192];
    snprintf(path, sizeof path, "%s/%s", f->dir, name);
    assert_int_equal(mkdir(path, 0700), 0);
}

/* A failed write is tried again on its own (after 1 s): fixing the disk
 * is enough, no other change is needed. */
static void test_retry_after_failure(void **state) {
    Fixture *f = *state;
    RecordSaver *s = failing_saver(f, "later");
    make_subdir(f, "later");
    for (int i = 0; i < 500 && record_saver_last_error(s) < 0; i++)
        assert_true(sd_event_run(f->event, 10 * USEC_PER_MSEC) >= 0);
    assert_int_equal(record_saver_last_error(s), 0);
    assert_true(record_saver_idle(s));
    record_saver_free(s);
}

/* Freeing with a waiter queued: the write still lands, and the waiter
 * hears -ECANCELED (no answer is coming). */
static void test_free_cancels_waiters(void **state) {
    Fixture *f = *state;
    add_workspace(f->record, 1);
    assert_int_equal(record_saver_submit(f->saver, f->record), 0);
    Done d = {};
    assert_int_equal(record_saver_wait(f->saver, on_done, &d, NULL), 0);
    f->saver = record_saver_free(f->saver);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.error, -ECANCELED);
    assert_int_equal(file_generation(f->path), 1);
}

/* A wait when everything is durable already still answers from the loop,
 * never from inside the call. */
static void test_wait_when_idle(void **state) {
    Fixture *f = *state;
    Done d = {};
    assert_int_equal(record_saver_wait(f->saver, on_done, &d, NULL), 0);
    assert_int_equal(d.calls, 0);
    run_until(f, &d);
    assert_int_equal(d.error, 0);
}

/* A write that fails is said to its waiters, and the next good write
 * clears it. */
static void test_failure_then_recovery(void **state) {
    Fixture *f = *state;
    RecordSaver *s = failing_saver(f, "missing");
    make_subdir(f, "missing");
    assert_int_equal(record_saver_submit(s, f->record), 0);
    Done d2 = {};
    assert_int_equal(record_saver_wait(s, on_done, &d2, NULL), 0);
    run_until(f, &d2);
    assert_int_equal(d2.error, 0);
    assert_int_equal(record_saver_last_error(s), 0);
    RecordSaverStats st;
    record_saver_stats(s, &st);
    assert_int_equal(st.failures, 1);
    record_saver_free(s);
}

/* A cancelled waiter is never called; the others still are. Cancelling
 * the last one and waiting again keeps the queue whole. */
static void test_cancel(void **state) {
    Fixture *f = *state;
    assert_int_equal(record_saver_submit(f->saver, f->record), 0);
    Done a = {}, b = {};
    RecordSaverWaiter *wa = NULL;
    assert_int_equal(record_saver_wait(f->saver, on_done, &a, &wa), 0);
    assert_int_equal(record_saver_wait(f->saver, on_done, &b, NULL), 0);
    record_saver_waiter_cancel(wa);
    RecordSaverWaiter *wc = NULL;
    Done c = {}, e = {};
    assert_int_equal(record_saver_wait(f->saver, on_done, &c, &wc), 0);
    record_saver_waiter_cancel(wc); /* the tail */
    assert_int_equal(record_saver_wait(f->saver, on_done, &e, NULL), 0);
    run_until(f, &b);
    run_until(f, &e);
    assert_int_equal(c.calls, 0);
    for (int i = 0; i < 5; i++)
        (void) sd_event_run(f->event, 10 * USEC_PER_MSEC);
    assert_int_equal(a.calls, 0);
}

/* Free writes what is still pending: nothing submitted is lost at exit. */
static void test_free_writes_pending(void **state) {
    Fixture *f = *state;
    for (unsigned i = 0; i < 20; i++) {
        add_workspace(f->record, i);
        assert_int_equal(record_saver_submit(f->saver, f->record), 0);
    }
    f->saver = record_saver_free(f->saver);
    assert_int_equal(file_generation(f->path), 1); /* one iteration, one snapshot */
    StateRecord *r = NULL;
    assert_int_equal(state_record_load(f->path, &r), 0);
    assert_int_equal(r->n_workspaces, 20);
    state_record_free(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_burst_lands_newest, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_snapshot_per_iteration, setup, teardown),
        cmocka_unit_test_setup_teardown(test_durable_in_the_callback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_from_a_callback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retry_after_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_free_cancels_waiters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_when_idle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failure_then_recovery, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_free_writes_pending, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
