/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of the supervisor's pure parts: no root, no processes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sys/sysmacros.h>

#include "argv.h"
#include "backoff.h"
#include "fsm.h"
#include "fuse-cleanup.h"
#include "linebuf.h"
#include "proc.h"
#include "util.h"

/* ---- argv -------------------------------------------------------------- */

static void test_argv_expand(void **st) {
    const char *content[] = { "/c/0", "/c/1", "/c/2", NULL };
    ArgvValues v = { .id = "ws1", .tenant = "acme", .state_dir = "/s/ws1", .content_dirs = content,
                     .mountpoint = "/m/ws1", .volume = "state-0" };
    const char *tmpl[] = { "/usr/bin/fs", "--state={state_dir}", "--content", "{content_dirs}",
                           "{content_dir}", "{shards}", "{id}-{tenant}@{volume}", "{{lit}}",
                           "{mountpoint}", "", NULL };
    char **out = NULL;
    assert_int_equal(argv_template_expand(tmpl, &v, &out), 0);
    const char *want[] = { "/usr/bin/fs", "--state=/s/ws1", "--content", "/c/0,/c/1,/c/2", "/c/0", "3",
                           "ws1-acme@state-0", "{lit}", "/m/ws1", "", NULL };
    assert_true(strv_equal((const char *const *) out, want));
    strv_free(out);
}

static void test_argv_errors(void **st) {
    ArgvValues v = { .id = "a", .state_dir = "/s", .mountpoint = "/m" };
    char **out = NULL;
    const char *unknown[] = { "/x", "{nope}", NULL };
    const char *open_[] = { "/x", "{id", NULL };
    const char *stray[] = { "/x", "a}b", NULL };
    const char *empty[] = { NULL };
    assert_int_equal(argv_template_expand(unknown, &v, &out), -EINVAL);
    assert_int_equal(argv_template_expand(open_, &v, &out), -EINVAL);
    assert_int_equal(argv_template_expand(stray, &v, &out), -EINVAL);
    assert_int_equal(argv_template_expand(empty, &v, &out), -EINVAL);
    ArgvValues missing = { .id = "a" };
    const char *needs[] = { "/x", "{state_dir}", NULL };
    assert_int_equal(argv_template_expand(needs, &missing, &out), -EINVAL);
    /* No content dirs: empty expansions, shards 0. */
    const char *c[] = { "/x", "{content_dirs}", "{content_dir}", "{shards}", "{tenant}", NULL };
    assert_int_equal(argv_template_expand(c, &v, &out), 0);
    const char *want[] = { "/x", "", "", "0", "", NULL };
    assert_true(strv_equal((const char *const *) out, want));
    strv_free(out);
}

/* ---- backoff ----------------------------------------------------------- */

#define MS USEC_PER_MSEC
static const uint64_t MID = UINT64_C(1) << 63; /* jitter factor exactly 1.0 */

static void test_backoff_growth(void **st) {
    BackoffParams p = { .initial = 100 * MS, .max = 1000 * MS };
    assert_int_equal(backoff_delay(&p, 0, MID), 100 * MS);
    assert_int_equal(backoff_delay(&p, 1, MID), 100 * MS);
    assert_int_equal(backoff_delay(&p, 2, MID), 200 * MS);
    assert_int_equal(backoff_delay(&p, 3, MID), 400 * MS);
    assert_int_equal(backoff_delay(&p, 4, MID), 800 * MS);
    assert_int_equal(backoff_delay(&p, 5, MID), 1000 * MS);
    assert_int_equal(backoff_delay(&p, 1000000, MID), 1000 * MS); /* no overflow */
}

static void test_backoff_jitter(void **st) {
    BackoffParams p = { .initial = 1000 * MS, .max = 60000 * MS };
    /* n=3: 4 s +-20%: [3.2 s, 4.8 s) */
    assert_int_equal(backoff_delay(&p, 3, 0), 3200 * MS);
    usec_t hi = backoff_delay(&p, 3, UINT64_MAX);
    assert_true(hi > 4790 * MS && hi <= 4800 * MS);
    /* The floor: never below max(initial, 100 ms), even with -20%. */
    assert_int_equal(backoff_delay(&p, 1, 0), 1000 * MS);
    BackoffParams tiny = { .initial = 1 * MS, .max = 5 * MS };
    assert_int_equal(backoff_delay(&tiny, 1, 0), BACKOFF_MIN_DELAY);
    assert_int_equal(backoff_delay(&tiny, 9, UINT64_MAX), BACKOFF_MIN_DELAY);
    /* The cap holds after jitter. */
    assert_int_equal(backoff_delay(&p, 40, UINT64_MAX), 60000 * MS);
    /* Consecutive attempts never overlap (x1.6 > x1.2), so a test can
     * check that recorded delays grow. */
    BackoffParams t = { .initial = 100 * MS, .max = 10000 * MS };
    for (unsigned n = 1; n < 6; n++)
        assert_true(backoff_delay(&t, n, UINT64_MAX) < backoff_delay(&t, n + 1, 0));
}

static void test_backoff_reset_and_tally(void **st) {
    BackoffParams p = { .initial = 100 * MS, .max = 1000 * MS, .reset_after = 5000 * MS,
                        .crashloop_deaths = 3, .crashloop_interval = 10000 * MS };
    assert_int_equal(backoff_next_attempt(&p, 0, 0), 1);
    assert_int_equal(backoff_next_attempt(&p, 3, 4999 * MS), 4);
    assert_int_equal(backoff_next_attempt(&p, 3, 5000 * MS), 1);

    BackoffTally t = {};
    usec_t now = 1000000 * MS;
    assert_false(backoff_tally_would_trip(&t, &p, now));
    backoff_tally_record(&t, now);
    assert_false(backoff_tally_would_trip(&t, &p, now + 1));
    backoff_tally_record(&t, now + 1);
    assert_true(backoff_tally_would_trip(&t, &p, now + 2)); /* 3rd death within 10 s */
    /* Old deaths fall out of the window. */
    assert_false(backoff_tally_would_trip(&t, &p, now + 10000 * MS + 1));
    backoff_tally_reset(&t);
    assert_false(backoff_tally_would_trip(&t, &p, now + 2));
    /* 0 = never give up; the tally stays bounded. */
    BackoffParams never = p;
    never.crashloop_deaths = 0;
    for (int i = 0; i < 200; i++)
        backoff_tally_record(&t, now + (usec_t) i);
    assert_int_equal(t.n, BACKOFF_TALLY_MAX);
    assert_false(backoff_tally_would_trip(&t, &never, now + 300));
}

/* ---- the transition table ---------------------------------------------- */

#define S(x) SUPERVISOR_##x
#define E(x) SUPERVISOR_EVENT_##x
#define A(x) SUPERVISOR_ACTION_##x
#define I(x) SUPERVISOR_INTENT_##x

typedef struct Row {
    SupervisorState state;
    SupervisorIntent intent;
    RestartPolicy policy;
    bool failed, crashloop, roh;
    SupervisorEvent ev;
    int ret;
    SupervisorState new_state;
    SupervisorIntent new_intent;
    unsigned must;     /* actions that must be set */
    unsigned mustnot;  /* actions that must not be set */
} Row;

static const Row rows[] = {
    /* start, adopt */
    { S(STOPPED), I(NONE), RESTART_ON_FAILURE, 0, 0, 0, E(START), 0, S(STARTING), I(NONE), A(SPAWN) | A(CLEANUP_MOUNT), 0 },
    { S(STOPPED), I(NONE), RESTART_ON_FAILURE, 0, 0, 0, E(ADOPTED), 0, S(RUNNING), I(NONE), 0, A(SPAWN) },
    { S(STOPPED), I(NONE), RESTART_ON_FAILURE, 0, 0, 0, E(EXITED), -ESTALE, S(STOPPED), I(NONE), 0, ~0u },
    /* readiness */
    { S(STARTING), I(NONE), RESTART_ON_FAILURE, 0, 0, 0, E(READY), 0, S(RUNNING), I(NONE), A(CANCEL_TIMER), A(SPAWN) },
    { S(STARTING), I(NONE), RESTART_ON_FAILURE, 0, 0, 0, E(READY_TIMEOUT), 0, S(STOPPING), I(FAILURE), A(KILL), A(TERM) },
    { S(RUNNING), I(NONE), RESTART_ON_FAILURE, 0, 0, 0, E(READY_TIMEOUT), -ESTALE, S(RUNNING), I(NONE), 0, ~0u },
    { S(RUNNING), I(NONE), RESTART_ON_FAILURE, 0, 0, 0, E(READY), -ESTALE, S(RUNNING), I(NONE), 0, ~0u },
    /* deaths and policies */
    { S(RUNNING), I(NONE), RESTART_ON_FAILURE, 1, 0, 0, E(EXITED), 0, S(BACKOFF), I(NONE), A(ARM_BACKOFF) | A(RECORD_DEATH) | A(CLEANUP_MOUNT), A(SPAWN) },
    { S(RUNNING), I(NONE), RESTART_ON_FAILURE, 0, 0, 0, E(EXITED), 0, S(STOPPED), I(NONE), A(CLEANUP_MOUNT), A(ARM_BACKOFF) },
    { S(RUNNING), I(NONE), RESTART_ALWAYS, 0, 0, 0, E(EXITED), 0, S(BACKOFF), I(NONE), A(ARM_BACKOFF), 0 },
    { S(RUNNING), I(NONE), RESTART_NEVER, 1, 0, 0, E(EXITED), 0, S(FAILED), I(NONE), A(CLEANUP_MOUNT), A(ARM_BACKOFF) },
    { S(RUNNING), I(NONE), RESTART_NEVER, 0, 0, 0, E(EXITED), 0, S(STOPPED), I(NONE), 0, A(ARM_BACKOFF) },
    { S(RUNNING), I(NONE), RESTART_ON_FAILURE, 1, 1, 0, E(EXITED), 0, S(FAILED), I(NONE), A(RECORD_DEATH), A(ARM_BACKOFF) },
    /* dying before the mount is a failure even with status 0 */
    { S(STARTING), I(NONE), RESTART_ON_FAILURE, 0, 0, 0, E(EXITED), 0, S(BACKOFF), I(NONE), A(ARM_BACKOFF), 0 },
    { S(STARTING), I(NONE), RESTART_ON_FAILURE, 0, 0, 0, E(SPAWN_FAILED), 0, S(BACKOFF), I(NONE), A(ARM_BACKOFF), 0 },
    { S(STARTING), I(NONE), RESTART_ON_FAILURE, 0, 1, 0, E(SPAWN_FAILED), 0, S(FAILED), I(NONE), 0, A(ARM_BACKOFF) },
    /* backoff */
    { S(BACKOFF), I(NONE), RESTART_ON_FAILURE, 0, 0, 0, E(BACKOFF_ELAPSED), 0, S(STARTING), I(NONE), A(SPAWN), A(RESET_TALLY) },
    { S(BACKOFF), I(NONE), RESTART_ON_FAILURE, 0, 0, 0, E(STOP_REQUESTED), 0, S(STOPPED), I(NONE), A(CANCEL_TIMER), A(SPAWN) },
    { S(BACKOFF), I(NONE), RESTART_ON_FAILURE, 0, 0, 0, E(RESTART_REQUESTED), 0, S(STARTING), I(NONE), A(SPAWN) | A(RESET_TALLY) | A(CANCEL_TIMER), 0 },
    /* stop */
    { S(RUNNING), I(NONE), RESTART_ON_FAILURE, 0, 0, 0, E(STOP_REQUESTED), 0, S(STOPPING), I(STOP), A(TERM), A(KILL) },
    { S(STARTING), I(NONE), RESTART_ON_FAILURE, 0, 0, 0, E(STOP_REQUESTED), 0, S(STOPPING), I(STOP), A(TERM) | A(CANCEL_TIMER), 0 },
    { S(STOPPING), I(STOP), RESTART_ON_FAILURE, 0, 0, 0, E(STOP_TIMEOUT), 0, S(STOPPING), I(STOP), A(KILL), 0 },
    { S(STOPPING), I(STOP), RESTART_ALWAYS, 1, 0, 0, E(EXITED), 0, S(STOPPED), I(NONE), A(CLEANUP_MOUNT) | A(CANCEL_TIMER), A(SPAWN) | A(ARM_BACKOFF) | A(RECORD_DEATH) },
    { S(STOPPING), I(STOP), RESTART_ON_FAILURE, 0, 0, 0, E(STOP_REQUESTED), -ESTALE, S(STOPPING), I(STOP), 0, ~0u },
    { S(STOPPING), I(RESTART), RESTART_ON_FAILURE, 0, 0, 0, E(STOP_REQUESTED), 0, S(STOPPING), I(STOP), 0, ~0u },
    { S(STOPPING), I(FAILURE), RESTART_ON_FAILURE, 0, 0, 0, E(STOP_REQUESTED), 0, S(STOPPING), I(STOP), 0, ~0u },
    { S(FAILED), I(NONE), RESTART_ON_FAILURE, 0, 0, 0, E(STOP_REQUESTED), 0, S(STOPPED), I(NONE), 0, ~0u },
    /* restart */
    { S(RUNNING), I(NONE), RESTART_ON_FAILURE, 0, 0, 0, E(RESTART_REQUESTED), 0, S(STOPPING), I(RESTART), A(TERM), 0 },
    { S(STOPPING), I(RESTART), RESTART_NEVER, 0, 0, 0, E(EXITED), 0, S(STARTING), I(NONE), A(SPAWN) | A(CLEANUP_MOUNT), A(RECORD_DEATH) },
    { S(STOPPING), I(STOP), RESTART_ON_FAILURE, 0, 0, 0, E(RESTART_REQUESTED), -ESTALE, S(STOPPING), I(STOP), 0, ~0u },
    { S(FAILED), I(NONE), RESTART_ON_FAILURE, 0, 0, 0, E(RESTART_REQUESTED), 0, S(STARTING), I(NONE), A(SPAWN) | A(RESET_TALLY), 0 },
    { S(FAILED), I(NONE), RESTART_ON_FAILURE, 0, 0, 0, E(START), -ESTALE, S(FAILED), I(NONE), 0, ~0u },
    { S(FAILED), I(NONE), RESTART_ON_FAILURE, 0, 0, 0, E(BACKOFF_ELAPSED), -ESTALE, S(FAILED), I(NONE), 0, ~0u },
    /* killed for not mounting: a failure, policy + tally decide */
    { S(STOPPING), I(FAILURE), RESTART_ON_FAILURE, 0, 0, 0, E(EXITED), 0, S(BACKOFF), I(NONE), A(RECORD_DEATH) | A(ARM_BACKOFF), 0 },
    { S(STOPPING), I(FAILURE), RESTART_ON_FAILURE, 0, 1, 0, E(EXITED), 0, S(FAILED), I(NONE), A(RECORD_DEATH), A(ARM_BACKOFF) },
    { S(STOPPING), I(FAILURE), RESTART_NEVER, 0, 0, 0, E(EXITED), 0, S(FAILED), I(NONE), 0, A(ARM_BACKOFF) },
    /* hangs */
    { S(RUNNING), I(NONE), RESTART_ON_FAILURE, 0, 0, 0, E(HANG_DETECTED), 0, S(RUNNING), I(NONE), A(NOTIFY_HANG), A(KILL) },
    { S(RUNNING), I(NONE), RESTART_ON_FAILURE, 0, 0, 1, E(HANG_DETECTED), 0, S(STOPPING), I(FAILURE), A(NOTIFY_HANG) | A(ABORT_CONN) | A(KILL), 0 },
    { S(STARTING), I(NONE), RESTART_ON_FAILURE, 0, 0, 1, E(HANG_DETECTED), -ESTALE, S(STARTING), I(NONE), 0, ~0u },
};

/* The gate: with its volumes out of service (FsmInput.blocked) nothing
 * that would spawn does; it waits in BLOCKED until UNBLOCKED. */
typedef struct GateRow {
    SupervisorState state;
    SupervisorIntent intent;
    bool blocked;
    SupervisorEvent ev;
    int ret;
    SupervisorState new_state;
    unsigned must, mustnot;
} GateRow;

static const GateRow gate_rows[] = {
    { S(STOPPED), I(NONE), 1, E(START), 0, S(BLOCKED), A(CLEANUP_MOUNT), A(SPAWN) },
    { S(STOPPED), I(NONE), 0, E(START), 0, S(STARTING), A(SPAWN), 0 },
    { S(BACKOFF), I(NONE), 1, E(BACKOFF_ELAPSED), 0, S(BLOCKED), 0, A(SPAWN) },
    { S(STOPPING), I(RESTART), 1, E(EXITED), 0, S(BLOCKED), A(CLEANUP_MOUNT), A(SPAWN) },
    { S(FAILED), I(NONE), 1, E(RESTART_REQUESTED), 0, S(BLOCKED), 0, A(SPAWN) },
    { S(BLOCKED), I(NONE), 1, E(UNBLOCKED), -ESTALE, S(BLOCKED), 0, ~0u },
    { S(BLOCKED), I(NONE), 1, E(RESTART_REQUESTED), -ESTALE, S(BLOCKED), 0, ~0u },
    { S(BLOCKED), I(NONE), 0, E(UNBLOCKED), 0, S(STARTING), A(SPAWN) | A(CLEANUP_MOUNT), A(RESET_TALLY) },
    { S(BLOCKED), I(NONE), 0, E(RESTART_REQUESTED), 0, S(STARTING), A(SPAWN) | A(RESET_TALLY), 0 },
    { S(BLOCKED), I(NONE), 1, E(STOP_REQUESTED), 0, S(STOPPED), 0, ~0u },
    { S(BLOCKED), I(NONE), 1, E(EXITED), -ESTALE, S(BLOCKED), 0, ~0u },
    /* a running daemon is never touched by the gate */
    { S(RUNNING), I(NONE), 1, E(READY), -ESTALE, S(RUNNING), 0, ~0u },
    { S(STARTING), I(NONE), 1, E(READY), 0, S(RUNNING), A(CANCEL_TIMER), A(SPAWN) },
    { S(STOPPED), I(NONE), 1, E(ADOPTED), 0, S(RUNNING), 0, A(SPAWN) },
};

static void test_fsm_gate(void **st) {
    for (size_t i = 0; i < ELEMENTSOF(gate_rows); i++) {
        const GateRow *r = &gate_rows[i];
        FsmInput in = { .state = r->state, .intent = r->intent, .policy = RESTART_ON_FAILURE, .blocked = r->blocked };
        FsmOutput o;
        int ret = fsm_transition(&in, r->ev, &o);
        if (ret != r->ret || o.state != r->new_state || (o.actions & r->must) != r->must ||
            (o.actions & r->mustnot) != 0)
            fail_msg("gate row %zu: %s + %s -> ret %d %s actions %#x", i, supervisor_state_to_string(r->state),
                     supervisor_event_to_string(r->ev), ret, supervisor_state_to_string(o.state), o.actions);
    }
}

static void test_fsm_table(void **st) {
    for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
        const Row *r = &rows[i];
        FsmInput in = { .state = r->state, .intent = r->intent, .policy = r->policy,
                        .exit_failed = r->failed, .crashloop = r->crashloop, .restart_on_hang = r->roh };
        FsmOutput o;
        int ret = fsm_transition(&in, r->ev, &o);
        if (ret != r->ret || o.state != r->new_state || o.intent != r->new_intent ||
            (o.actions & r->must) != r->must || (o.actions & r->mustnot) != 0)
            fail_msg("row %zu: %s + %s -> ret %d %s/%s actions %#x", i,
                     supervisor_state_to_string(r->state), supervisor_event_to_string(r->ev), ret,
                     supervisor_state_to_string(o.state), supervisor_intent_to_string(o.intent), o.actions);
    }
}

/* Every (state, event, facts) combination either is ignored or leads to a
 * valid state; no combination both spawns and arms a backoff, and nothing
 * but an explicit restart leaves FAILED. */
static void test_fsm_exhaustive(void **st) {
    for (int s = 0; s < _SUPERVISOR_STATE_MAX; s++)
        for (int e = 0; e < _SUPERVISOR_EVENT_MAX; e++)
            for (int it = 0; it < _SUPERVISOR_INTENT_MAX; it++)
                for (int p = 0; p < _RESTART_POLICY_MAX; p++)
                    for (int f = 0; f < 16; f++) {
                        FsmInput in = { s, it, p, f & 1, f & 2, f & 4, f & 8 };
                        FsmOutput o;
                        int r = fsm_transition(&in, e, &o);
                        assert_true(r == 0 || r == -ESTALE);
                        assert_true(o.state >= 0 && o.state < _SUPERVISOR_STATE_MAX);
                        assert_false((o.actions & A(SPAWN)) && (o.actions & A(ARM_BACKOFF)));
                        if (s == S(FAILED) && o.state != S(FAILED))
                            assert_true(e == E(RESTART_REQUESTED) || e == E(STOP_REQUESTED) ||
                                        e == E(ADOPTED));
                        if (o.actions & A(SPAWN))
                            assert_int_equal(o.state, S(STARTING));
                        if (in.blocked)
                            assert_false(o.actions & A(SPAWN));
                    }
}

static void test_enum_strings(void **st) {
    for (int s = 0; s < _SUPERVISOR_STATE_MAX; s++)
        assert_int_equal(supervisor_state_from_string(supervisor_state_to_string(s)), s);
    for (int e = 0; e < _SUPERVISOR_EVENT_MAX; e++)
        assert_int_equal(supervisor_event_from_string(supervisor_event_to_string(e)), e);
    assert_int_equal(supervisor_state_from_string("bogus"), -EINVAL);
    assert_null(supervisor_state_to_string(_SUPERVISOR_STATE_MAX));
}

/* ---- line buffer ------------------------------------------------------- */

typedef struct Lines {
    char got[8][LINEBUF_MAX + 1];
    bool trunc[8];
    int n;
} Lines;

static void collect(const char *line, bool truncated, void *ud) {
    Lines *l = ud;
    if (l->n < 8) {
        strcpy(l->got[l->n], line);
        l->trunc[l->n] = truncated;
    }
    l->n++;
}

static void test_linebuf(void **st) {
    LineBuffer b = {};
    Lines l = {};
    linebuf_feed(&b, "hello\nwor", 9, collect, &l);
    linebuf_feed(&b, "ld\n\npartial", 11, collect, &l);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.got[0], "hello");
    assert_string_equal(l.got[1], "world");
    assert_string_equal(l.got[2], "");
    linebuf_flush(&b, collect, &l);
    assert_int_equal(l.n, 4);
    assert_string_equal(l.got[3], "partial");

    /* An overlong line is cut at LINEBUF_MAX, its tail dropped. */
    Lines m = {};
    char big[3 * LINEBUF_MAX];
    memset(big, 'x', sizeof big);
    linebuf_feed(&b, big, sizeof big, collect, &m);
    linebuf_feed(&b, "tail\nnext\n", 10, collect, &m);
    assert_int_equal(m.n, 2);
    assert_true(m.trunc[0]);
    assert_int_equal(strlen(m.got[0]), LINEBUF_MAX);
    assert_string_equal(m.got[1], "next");
    assert_false(m.trunc[1]);
    assert_int_equal(b.dropped, 2 * LINEBUF_MAX + 4);
}

/* ---- parsers ----------------------------------------------------------- */

static void test_mountinfo_line(void **st) {
    /* A mountinfo as the kernel writes it (and a line it never would),
     * read by libmount: only the FUSE mounts come back, in order. */
    char path[] = "/tmp/test-supervise-mountinfo.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs("30 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n"
          "812 30 0:93 / /tmp/a\\040b rw,nosuid,nodev,relatime shared:470 - fuse.testfs testfs "
          "rw,user_id=0,group_id=0\n"
          "garbage\n"
          "40 30 0:50 / /x rw - fuseblk /dev/sdb1 rw\n"
          "41 30 0:51 / /sys/fs/fuse/connections rw - fusectl fusectl rw\n",
          f);
    assert_int_equal(fclose(f), 0);
    FuseMount *m = NULL;
    size_t n = 0;
    assert_int_equal(fuse_cleanup_read_mounts(path, &m, &n), 0);
    unlink(path);
    assert_int_equal(n, 2);
    assert_string_equal(m[0].target, "/tmp/a b");
    assert_string_equal(m[0].fstype, "fuse.testfs");
    assert_int_equal(major(m[0].devno), 0);
    assert_int_equal(minor(m[0].devno), 93);
    assert_int_equal(m[0].id, 812);
    assert_string_equal(m[1].target, "/x");
    assert_string_equal(m[1].fstype, "fuseblk");
    fuse_cleanup_mounts_free(m, n);
    assert_int_equal(fuse_cleanup_read_mounts("/nonexistent/mountinfo", &m, &n) < 0, 1);

    FuseMount tab[2] = { { .target = "/a", .devno = 1 }, { .target = "/a", .devno = 2 } };
    assert_int_equal(fuse_cleanup_find(tab, 2, "/a")->devno, 2); /* topmost */
    assert_null(fuse_cleanup_find(tab, 2, "/b"));
}

static void test_proc_stat(void **st) {
    uint64_t t;
    assert_int_equal(proc_parse_start_time(
        "1234 (we ird) name)) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 "
        "12345678 100", &t), 0);
    assert_int_equal(t, 987654);
    assert_int_equal(proc_parse_start_time("1 (x) S 1 2", &t), -EBADMSG);
    assert_int_equal(proc_start_time(getpid(), &t), 0);
    assert_true(t > 0);
    /* The boot id is the kernel's, and the legacy hash is the one older
     * records hold: FNV-1a of the id as /proc prints it. */
    char id[33];
    uint64_t h1, h2;
    assert_int_equal(proc_boot_id(id, &h1), 0);
    assert_int_equal(strlen(id), 32);
    assert_int_equal(strspn(id, "0123456789abcdef"), 32);
    _cleanup_free_ char *kernel = NULL;
    assert_int_equal(read_one_line_file("/proc/sys/kernel/random/boot_id", &kernel), 0);
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (const char *c = kernel; *c; c++)
        h = (h ^ (unsigned char) *c) * UINT64_C(0x100000001b3);
    assert_true(h1 == (h ?: 1));
    char undashed[33] = "";
    for (const char *c = kernel; *c; c++)
        if (*c != '-')
            strncat(undashed, c, 1);
    assert_string_equal(id, undashed);
    assert_int_equal(proc_boot_id(id, &h2), 0);
    assert_true(h1 == h2 && h1 != 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_argv_expand),     cmocka_unit_test(test_argv_errors),
        cmocka_unit_test(test_backoff_growth),  cmocka_unit_test(test_backoff_jitter),
        cmocka_unit_test(test_backoff_reset_and_tally), cmocka_unit_test(test_fsm_table), cmocka_unit_test(test_fsm_gate),
        cmocka_unit_test(test_fsm_exhaustive),  cmocka_unit_test(test_enum_strings),
        cmocka_unit_test(test_linebuf),         cmocka_unit_test(test_mountinfo_line),
        cmocka_unit_test(test_proc_stat),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
