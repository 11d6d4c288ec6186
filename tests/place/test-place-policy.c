/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The placement policy: exact cases, then property tests over thousands of
 * random add/remove sequences on random pool configurations (fixed PRNG
 * seed, so a failure reproduces). The model below keeps the volumes and
 * workspaces; every decision is checked against a brute-force reading of
 * the rules, and the invariants are checked after every step.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include "place-policy.h"
#include "util.h"

/* ---- exact cases --------------------------------------------------------- */

static PlacePoolConfig cfg_default(void) {
    return (PlacePoolConfig) {
        .pool_name = "state",
        .workspaces_per_volume = 3,
        .max_volumes = 8,
        .policy = PLACEMENT_SPREAD,
        .reserve_bytes = 64 * MIB,
        .reserve_inodes = 4096,
        .volume_size = 256 * MIB,
    };
}

#define CAND(n, i, w, t, fb) \
    (PlaceCandidate) { .name = n, .index = i, .n_workspaces = w, .tenant = t, \
                       .free_bytes = fb, .free_inodes = 100000 }

static void test_spread_order(void **state) {
    PlacePoolConfig cfg = cfg_default();
    PlaceCandidate c[] = {
        CAND("state-0", 0, 2, "", GIB),
        CAND("state-1", 1, 1, "", GIB),
        CAND("state-2", 2, 1, "", 2 * GIB), /* same count, more space: wins */
        CAND("state-3", 3, 3, "", 9 * GIB), /* at the bound */
    };
    PlaceRequest req = { .id = "w" };
    PlaceDecision d = {};
    assert_int_equal(place_policy_decide(c, ELEMENTSOF(c), &req, &cfg, &d), 0);
    assert_int_equal(d.action, PLACE_ACTION_USE);
    assert_string_equal(c[d.candidate].name, "state-2");
    assert_int_equal(d.n_verdicts, 4);
    assert_int_equal(d.verdicts[0].candidate, 2);
    assert_int_equal(d.verdicts[0].rank, 1);
    assert_int_equal(d.verdicts[1].candidate, 1);
    assert_int_equal(d.verdicts[2].candidate, 0);
    assert_int_equal(d.verdicts[3].candidate, 3);
    assert_int_equal(d.verdicts[3].reason, PLACE_REASON_AT_BOUND);
    assert_non_null(strstr(d.explanation, "state-2"));
    assert_non_null(strstr(d.explanation, "at the bound"));

    _cleanup_free_ char *why = NULL;
    assert_int_equal(place_decision_format_why(&d, c, ELEMENTSOF(c), &req, &cfg, &why), 0);
    for (size_t i = 0; i < ELEMENTSOF(c); i++)
        assert_non_null(strstr(why, c[i].name));
    assert_non_null(strstr(why, "<- chosen"));
    assert_non_null(strstr(why, "workspaces_per_volume"));
    place_decision_done(&d);

    /* Equal count and space: the lowest index wins, whatever the order. */
    PlaceCandidate e[] = { CAND("state-5", 5, 0, "", GIB), CAND("state-4", 4, 0, "", GIB) };
    assert_int_equal(place_policy_decide(e, 2, &req, &cfg, &d), 0);
    assert_string_equal(e[d.candidate].name, "state-4");
    place_decision_done(&d);
}

static void test_pack_order(void **state) {
    PlacePoolConfig cfg = cfg_default();
    cfg.policy = PLACEMENT_PACK;
    PlaceCandidate c[] = {
        CAND("state-0", 0, 1, "", 9 * GIB),
        CAND("state-1", 1, 2, "", GIB),
        CAND("state-2", 2, 2, "", GIB),
        CAND("state-3", 3, 3, "", GIB),
    };
    PlaceRequest req = { .id = "w" };
    PlaceDecision d = {};
    assert_int_equal(place_policy_decide(c, ELEMENTSOF(c), &req, &cfg, &d), 0);
    assert_int_equal(d.action, PLACE_ACTION_USE);
    assert_string_equal(c[d.candidate].name, "state-1");
    assert_non_null(strstr(d.explanation, "pack"));
    place_decision_done(&d);
}

static void test_flags_space_inodes(void **state) {
    PlacePoolConfig cfg = cfg_default();
    PlaceCandidate c[] = {
        CAND("state-0", 0, 0, "", GIB),
        CAND("state-1", 1, 0, "", GIB),
        CAND("state-2", 2, 0, "", GIB),
        CAND("state-3", 3, 0, "", 10 * MIB),
        CAND("state-4", 4, 0, "", GIB),
        CAND("state-5", 5, 1, "", GIB),
    };
    c[0].flags = PLACE_VOLUME_DEGRADED;
    c[1].flags = PLACE_VOLUME_READ_ONLY;
    c[2].flags = PLACE_VOLUME_UNAVAILABLE;
    c[4].free_inodes = 10;
    PlaceRequest req = { .id = "w" };
    PlaceDecision d = {};
    assert_int_equal(place_policy_decide(c, ELEMENTSOF(c), &req, &cfg, &d), 0);
    assert_int_equal(d.action, PLACE_ACTION_USE);
    assert_string_equal(c[d.candidate].name, "state-5");
    PlaceReason expect[] = { PLACE_REASON_DEGRADED, PLACE_REASON_READ_ONLY,
                             PLACE_REASON_UNAVAILABLE, PLACE_REASON_NO_SPACE,
                             PLACE_REASON_NO_INODES };
    for (size_t i = 0; i < ELEMENTSOF(expect); i++) {
        assert_int_equal(d.verdicts[1 + i].candidate, i);
        assert_int_equal(d.verdicts[1 + i].reason, expect[i]);
    }
    place_decision_done(&d);
}

static void test_tenant_isolation(void **state) {
    PlacePoolConfig cfg = cfg_default();
    cfg.tenant_isolation = true;
    PlaceCandidate c[] = {
        CAND("state-0", 0, 1, "a", GIB),
        CAND("state-1", 1, 1, "", GIB),   /* workspaces without tenant */
        CAND("state-2", 2, 2, "b", GIB),
    };
    PlaceRequest req = { .id = "w", .tenant = "b" };
    PlaceDecision d = {};
    assert_int_equal(place_policy_decide(c, 3, &req, &cfg, &d), 0);
    assert_string_equal(c[d.candidate].name, "state-2");
    place_decision_done(&d);

    /* No tenant = tenant "": shares only with other tenant-less ones. */
    req.tenant = NULL;
    assert_int_equal(place_policy_decide(c, 3, &req, &cfg, &d), 0);
    assert_string_equal(c[d.candidate].name, "state-1");
    place_decision_done(&d);

    /* A new tenant gets a new volume; an empty one is free for anyone. */
    req.tenant = "c";
    assert_int_equal(place_policy_decide(c, 3, &req, &cfg, &d), 0);
    assert_int_equal(d.action, PLACE_ACTION_CARVE);
    assert_int_equal(d.carve_index, 3);
    assert_non_null(strstr(d.explanation, "tenant_isolation"));
    place_decision_done(&d);

    cfg.max_volumes = 3;
    assert_int_equal(place_policy_decide(c, 3, &req, &cfg, &d), 0);
    assert_int_equal(d.action, PLACE_ACTION_REFUSE);
    assert_int_equal(d.reason, PLACE_REASON_POOL_FULL);
    assert_non_null(strstr(d.explanation, "tenant_isolation"));
    assert_non_null(strstr(d.explanation, "max_volumes"));
    place_decision_done(&d);

    /* Without isolation the tenant does not matter. */
    cfg.tenant_isolation = false;
    assert_int_equal(place_policy_decide(c, 3, &req, &cfg, &d), 0);
    assert_string_equal(c[d.candidate].name, "state-0");
    place_decision_done(&d);
}

static void test_pool_full_message(void **state) {
    PlacePoolConfig cfg = cfg_default();
    PlaceCandidate c[8];
    char names[8][16];
    for (unsigned i = 0; i < 8; i++) {
        snprintf(names[i], sizeof(names[i]), "state-%u", i);
        c[i] = CAND(names[i], i, 3, "", GIB);
    }
    PlaceRequest req = { .id = "w" };
    PlaceDecision d = {};
    assert_int_equal(place_policy_decide(c, 8, &req, &cfg, &d), 0);
    assert_int_equal(d.action, PLACE_ACTION_REFUSE);
    assert_int_equal(d.reason, PLACE_REASON_POOL_FULL);
    assert_string_equal(d.explanation,
                        "pool 'state' is full: 8 volumes × 3 workspaces (workspaces_per_volume) are "
                        "in use; raise pools.state.max_volumes or workspaces_per_volume");
    place_decision_done(&d);

    /* One below max: carve; the index is the lowest free one. */
    c[3] = c[7];
    c[3].index = 9;
    assert_int_equal(place_policy_decide(c, 7, &req, &cfg, &d), 0);
    assert_int_equal(d.action, PLACE_ACTION_CARVE);
    assert_int_equal(d.carve_index, 3);
    place_decision_done(&d);

    /* Empty pool. */
    assert_int_equal(place_policy_decide(NULL, 0, &req, &cfg, &d), 0);
    assert_int_equal(d.action, PLACE_ACTION_CARVE);
    assert_int_equal(d.carve_index, 0);
    place_decision_done(&d);

    /* A request larger than a whole volume is refused, not carved for. */
    req.quota = 512 * MIB;
    assert_int_equal(place_policy_decide(NULL, 0, &req, &cfg, &d), 0);
    assert_int_equal(d.action, PLACE_ACTION_REFUSE);
    assert_int_equal(d.reason, PLACE_REASON_TOO_BIG);
    assert_non_null(strstr(d.explanation, "volume_size"));
    place_decision_done(&d);
}

/* A host that cannot hold another volume: refused (host-full), never a
 * carve that fails half-way; a host that can still does carve. */
static void test_host_full(void **state) {
    PlacePoolConfig cfg = cfg_default();
    PlaceCandidate c[1] = { CAND("state-0", 0, 3, "", GIB) };
    PlaceRequest req = { .id = "w" };
    PlaceDecision d = {};
    cfg.host_checked = true;
    cfg.host_carvable = 255 * MIB;
    assert_int_equal(place_policy_decide(c, 1, &req, &cfg, &d), 0);
    assert_int_equal(d.action, PLACE_ACTION_REFUSE);
    assert_int_equal(d.reason, PLACE_REASON_HOST_FULL);
    assert_non_null(strstr(d.explanation, "does not fit on the host"));
    assert_string_equal(place_reason_to_string(d.reason), "host-full");
    place_decision_done(&d);
    cfg.host_carvable = 256 * MIB;
    assert_int_equal(place_policy_decide(c, 1, &req, &cfg, &d), 0);
    assert_int_equal(d.action, PLACE_ACTION_CARVE);
    place_decision_done(&d);
    /* an existing volume with room is used whatever the host has */
    c[0].n_workspaces = 1;
    cfg.host_carvable = 0;
    assert_int_equal(place_policy_decide(c, 1, &req, &cfg, &d), 0);
    assert_int_equal(d.action, PLACE_ACTION_USE);
    place_decision_done(&d);
}

static void test_sticky(void **state) {
    PlacePoolConfig cfg = cfg_default();
    cfg.tenant_isolation = true;
    PlaceCandidate c[] = {
        CAND("state-0", 0, 0, "", GIB),
        CAND("state-1", 1, 2, "a", 1 * MIB), /* little space: sticky ignores it */
        CAND("state-2", 2, 3, "a", GIB),
        CAND("state-3", 3, 1, "b", GIB),
    };
    PlaceRequest req = { .id = "w", .tenant = "a", .sticky_volume = "state-1" };
    PlaceDecision d = {};
    assert_int_equal(place_policy_decide(c, 4, &req, &cfg, &d), 0);
    assert_int_equal(d.action, PLACE_ACTION_USE);
    assert_string_equal(c[d.candidate].name, "state-1");
    assert_non_null(strstr(d.explanation, "stickiness"));
    place_decision_done(&d);

    req.sticky_volume = "state-2";
    assert_int_equal(place_policy_decide(c, 4, &req, &cfg, &d), 0);
    assert_int_equal(d.action, PLACE_ACTION_REFUSE);
    assert_int_equal(d.reason, PLACE_REASON_AT_BOUND);
    assert_non_null(strstr(d.explanation, "not moved"));
    assert_non_null(strstr(d.explanation, "workspaces_per_volume"));
    place_decision_done(&d);

    req.sticky_volume = "state-3";
    assert_int_equal(place_policy_decide(c, 4, &req, &cfg, &d), 0);
    assert_int_equal(d.action, PLACE_ACTION_REFUSE);
    assert_int_equal(d.reason, PLACE_REASON_TENANT);
    place_decision_done(&d);

    req.sticky_volume = "state-9";
    assert_int_equal(place_policy_decide(c, 4, &req, &cfg, &d), 0);
    assert_int_equal(d.action, PLACE_ACTION_REFUSE);
    assert_int_equal(d.reason, PLACE_REASON_STICKY_MISSING);
    place_decision_done(&d);

    c[1].flags = PLACE_VOLUME_READ_ONLY;
    req.sticky_volume = "state-1";
    assert_int_equal(place_policy_decide(c, 4, &req, &cfg, &d), 0);
    assert_int_equal(d.action, PLACE_ACTION_REFUSE);
    assert_int_equal(d.reason, PLACE_REASON_READ_ONLY);
    place_decision_done(&d);
}

/* The verdict decision d gave candidate i. */
static const PlaceVerdict *verdict_of(const PlaceDecision *d, size_t i) {
    for (size_t k = 0; k < d->n_verdicts; k++)
        if (d->verdicts[k].candidate == i)
            return &d->verdicts[k];
    fail_msg("no verdict for candidate %zu", i);
    return NULL;
}

/* The two candidate verdicts no refusal reaches: the other volumes of a
 * sticky request are "not sticky", and a volume whose quotas would pass
 * quota_overcommit with this one is skipped for one that has room; each
 * described as `layoutctl why` prints it. */
static void test_not_sticky_and_overcommit(void **state) {
    PlacePoolConfig cfg = cfg_default();
    cfg.volume_size = GIB; /* a new volume could hold the 400 MiB quota */
    PlaceCandidate c[] = {
        CAND("state-0", 0, 1, "", GIB),
        CAND("state-1", 1, 1, "", GIB),
    };
    c[0].size_bytes = c[1].size_bytes = GIB;
    PlaceRequest req = { .id = "w", .sticky_volume = "state-1" };
    PlaceDecision d = {};
    assert_int_equal(place_policy_decide(c, 2, &req, &cfg, &d), 0);
    assert_int_equal(d.action, PLACE_ACTION_USE);
    assert_string_equal(c[d.candidate].name, "state-1");
    const PlaceVerdict *v = verdict_of(&d, 0);
    assert_int_equal(v->reason, PLACE_REASON_NOT_STICKY);
    char *text = NULL;
    assert_int_equal(place_verdict_describe(v, &c[0], &req, &cfg, &text), 0);
    assert_non_null(strstr(text, "state-1"));
    text = mfree(text);
    place_decision_done(&d);

    /* 700 MiB of quotas on state-0 already: 400 MiB more passes 100 % of
     * its 1 GiB, so state-1 (100 MiB of quotas) takes it; at 120 % both fit
     * and spread picks by its own order again. */
    req = (PlaceRequest) { .id = "w", .quota = 400 * MIB };
    c[0].quota_sum = 700 * MIB;
    c[1].quota_sum = 100 * MIB;
    assert_int_equal(place_policy_decide(c, 2, &req, &cfg, &d), 0);
    assert_int_equal(d.action, PLACE_ACTION_USE);
    assert_string_equal(c[d.candidate].name, "state-1");
    v = verdict_of(&d, 0);
    assert_int_equal(v->reason, PLACE_REASON_OVERCOMMIT);
    assert_int_equal(place_verdict_describe(v, &c[0], &req, &cfg, &text), 0);
    assert_non_null(strstr(text, "quota_overcommit"));
    assert_non_null(strstr(text, "100%"));
    text = mfree(text);
    place_decision_done(&d);
    cfg.quota_overcommit = 120;
    assert_int_equal(place_policy_decide(c, 2, &req, &cfg, &d), 0);
    assert_int_equal(d.action, PLACE_ACTION_USE);
    assert_int_equal(verdict_of(&d, 0)->reason, PLACE_REASON_NONE);
    place_decision_done(&d);
    /* Over on both: a new volume is carved for it. */
    c[1].quota_sum = 900 * MIB;
    cfg.quota_overcommit = 100;
    assert_int_equal(place_policy_decide(c, 2, &req, &cfg, &d), 0);
    assert_int_equal(d.action, PLACE_ACTION_CARVE);
    assert_int_equal(verdict_of(&d, 1)->reason, PLACE_REASON_OVERCOMMIT);
    place_decision_done(&d);
}

/* Placement by measured flush cost: c's figure in ms (< 0: unknown). */
static void set_flush(PlaceCandidate *c, double ms) {
    c->flush_known = ms >= 0;
    c->flush_usec = ms >= 0 ? (uint64_t) (ms * 1000) : 0;
}

static PlacePoolConfig cfg_flush(void) {
    PlacePoolConfig cfg = cfg_default();
    cfg.slow_flush_factor = 4;
    cfg.slow_flush_floor_usec = 20 * USEC_PER_MSEC;
    return cfg;
}

static void test_slow_flush(void **state) {
    PlacePoolConfig cfg = cfg_flush();
    PlaceRequest req = { .id = "w" };
    PlaceDecision d = {};
    PlaceCandidate c[] = {
        CAND("state-0", 0, 0, "", GIB), /* spread's pick, but slow */
        CAND("state-1", 1, 1, "", GIB),
        CAND("state-2", 2, 2, "", GIB),
    };
    set_flush(&c[0], 480);
    set_flush(&c[1], 2);
    set_flush(&c[2], -1);

    /* Slow (over the floor and 4x the fastest) while another can take it:
     * passed over, with the figures in the explanation and in why. */
    assert_int_equal(place_policy_decide(c, 3, &req, &cfg, &d), 0);
    assert_int_equal(d.action, PLACE_ACTION_USE);
    assert_string_equal(c[d.candidate].name, "state-1");
    assert_int_equal(d.verdicts[2].candidate, 0);
    assert_int_equal(d.verdicts[2].reason, PLACE_REASON_SLOW_FLUSH);
    assert_int_equal(d.verdicts[2].flush_baseline_usec, 2000);
    assert_non_null(strstr(d.explanation, "flushing slowly"));
    assert_non_null(strstr(d.explanation, "480.0 ms"));
    assert_non_null(strstr(d.explanation, "slow_flush_factor"));
    _cleanup_free_ char *why = NULL;
    assert_int_equal(place_decision_format_why(&d, c, 3, &req, &cfg, &why), 0);
    assert_non_null(strstr(why, "flushes slowly, 480.0 ms recently"));
    assert_non_null(strstr(why, "2.0 ms; slow_flush_factor"));
    assert_non_null(strstr(why, "20.0 ms (slow_flush_floor)"));
    assert_non_null(strstr(why, "flush 2.0 ms  <- chosen"));
    assert_string_equal(place_reason_to_string(PLACE_REASON_SLOW_FLUSH), "slow-flush");
    assert_int_equal(place_reason_from_string("slow-flush"), PLACE_REASON_SLOW_FLUSH);
    place_decision_done(&d);

    /* Off: the usual rule. */
    cfg.slow_flush_factor = 0;
    assert_int_equal(place_policy_decide(c, 3, &req, &cfg, &d), 0);
    assert_string_equal(c[d.candidate].name, "state-0");
    place_decision_done(&d);
    cfg = cfg_flush();

    /* Under the floor: idle volumes' jitter (15 ms against 0.1 ms is 150x)
     * does not count. */
    set_flush(&c[0], 15);
    set_flush(&c[1], 0.1);
    assert_int_equal(place_policy_decide(c, 3, &req, &cfg, &d), 0);
    assert_string_equal(c[d.candidate].name, "state-0");
    place_decision_done(&d);

    /* Over the floor but within the factor of the fastest: not slow. */
    set_flush(&c[0], 79);
    set_flush(&c[1], 20);
    assert_int_equal(place_policy_decide(c, 3, &req, &cfg, &d), 0);
    assert_string_equal(c[d.candidate].name, "state-0");
    place_decision_done(&d);
    set_flush(&c[0], 81);
    assert_int_equal(place_policy_decide(c, 3, &req, &cfg, &d), 0);
    assert_string_equal(c[d.candidate].name, "state-1");
    place_decision_done(&d);

    /* No figures (probe off, or no sample yet): the usual rule. */
    for (size_t i = 0; i < 3; i++)
        set_flush(&c[i], -1);
    assert_int_equal(place_policy_decide(c, 3, &req, &cfg, &d), 0);
    assert_string_equal(c[d.candidate].name, "state-0");
    place_decision_done(&d);

    /* A fast figure of a volume out of service is no baseline. */
    set_flush(&c[0], 480);
    set_flush(&c[1], 1);
    c[1].flags = PLACE_VOLUME_DEGRADED;
    assert_int_equal(place_policy_decide(c, 3, &req, &cfg, &d), 0);
    assert_string_equal(c[d.candidate].name, "state-0");
    place_decision_done(&d);
    c[1].flags = 0;

    /* A sticky request goes back to its data, slow or not. */
    set_flush(&c[1], 1);
    req.sticky_volume = "state-0";
    assert_int_equal(place_policy_decide(c, 3, &req, &cfg, &d), 0);
    assert_string_equal(c[d.candidate].name, "state-0");
    place_decision_done(&d);
    req.sticky_volume = NULL;
}

static void test_slow_flush_all_slow(void **state) {
    PlacePoolConfig cfg = cfg_flush();
    PlaceRequest req = { .id = "w" };
    PlaceDecision d = {};
    /* The only volume with room is slow, the fast one is full: a new
     * volume is carved rather than joining the busy one. */
    PlaceCandidate c[] = {
        CAND("state-0", 0, 1, "", GIB),
        CAND("state-1", 1, 3, "", GIB), /* at the bound */
        CAND("state-2", 2, 2, "", GIB),
    };
    set_flush(&c[0], 300);
    set_flush(&c[1], 3);
    set_flush(&c[2], 250);
    assert_int_equal(place_policy_decide(c, 3, &req, &cfg, &d), 0);
    assert_int_equal(d.action, PLACE_ACTION_CARVE);
    assert_int_equal(d.carve_index, 3);
    assert_non_null(strstr(d.explanation, "2 flushing slowly (up to 300.0 ms recently"));
    assert_non_null(strstr(d.explanation, "carving state-3"));
    place_decision_done(&d);

    /* No new volume can be had: the usual rule over the slow ones, said
     * so (a slow save beats a refused workspace). */
    cfg.max_volumes = 3;
    assert_int_equal(place_policy_decide(c, 3, &req, &cfg, &d), 0);
    assert_int_equal(d.action, PLACE_ACTION_USE);
    assert_string_equal(c[d.candidate].name, "state-0");
    assert_non_null(strstr(d.explanation, "flushes slowly (up to 300.0 ms"));
    assert_non_null(strstr(d.explanation, "placed by the usual rule"));
    for (size_t i = 0; i < d.n_verdicts; i++)
        assert_true(d.verdicts[i].reason != PLACE_REASON_SLOW_FLUSH);
    place_decision_done(&d);
    cfg.max_volumes = 8;
    cfg.host_checked = true;
    cfg.host_carvable = 0; /* host full: same fallback */
    assert_int_equal(place_policy_decide(c, 3, &req, &cfg, &d), 0);
    assert_int_equal(d.action, PLACE_ACTION_USE);
    assert_string_equal(c[d.candidate].name, "state-0");
    place_decision_done(&d);
    cfg.host_checked = false;

    /* Every volume equally slow (a busy host): none is slow relative to
     * the others, nothing changes. */
    c[1].n_workspaces = 0;
    set_flush(&c[1], 200);
    assert_int_equal(place_policy_decide(c, 3, &req, &cfg, &d), 0);
    assert_int_equal(d.action, PLACE_ACTION_USE);
    assert_string_equal(c[d.candidate].name, "state-1");
    place_decision_done(&d);
}

static void test_invalid(void **state) {
    PlacePoolConfig cfg = cfg_default();
    PlaceRequest req = { .id = "w" };
    PlaceDecision d = {};
    cfg.workspaces_per_volume = 0;
    assert_int_equal(place_policy_decide(NULL, 0, &req, &cfg, &d), 0);
    assert_int_equal(d.action, PLACE_ACTION_REFUSE);
    assert_int_equal(d.reason, PLACE_REASON_INVALID);
    place_decision_done(&d);
    assert_int_equal(place_policy_decide(NULL, 1, &req, &cfg, &d), -EINVAL);

    for (int r = 0; r < _PLACE_REASON_MAX; r++)
        assert_int_equal(place_reason_from_string(place_reason_to_string(r)), r);
    for (int a = 0; a < _PLACE_ACTION_MAX; a++)
        assert_int_equal(place_action_from_string(place_action_to_string(a)), a);
    assert_int_equal(place_reason_from_string("nope"), _PLACE_REASON_INVALID);
}

/* ---- property tests ------------------------------------------------------ */

static uint64_t rng_state;
static uint64_t rnd(void) { /* xorshift64*: deterministic, seeded below */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ULL;
}
static unsigned rndu(unsigned n) { return (unsigned) (rnd() % n); }

#define MAXV 16
#define MAXW 256
static const char *const tenants[] = { NULL, "a", "b", "c" };

typedef struct MVolume {
    char name[24];
    unsigned index;
    uint64_t free_bytes, free_inodes;
    unsigned flags;
} MVolume;

typedef struct MWorkspace {
    char id[16];
    const char *tenant;
    int volume;   /* index into model volumes */
    bool active;  /* false: kept data */
    uint64_t need;
} MWorkspace;

typedef struct Model {
    PlacePoolConfig cfg;
    MVolume v[MAXV];
    size_t nv;
    MWorkspace w[MAXW];
    size_t nw;
    unsigned next_id;
    bool space_limits;
} Model;

static unsigned count_on(const Model *m, int vol) {
    unsigned n = 0;
    for (size_t i = 0; i < m->nw; i++)
        n += m->w[i].active && m->w[i].volume == vol;
    return n;
}

/* Candidates in a random order (the decision must not depend on it);
 * perm[i] is the model volume of candidate i. */
static void build_candidates(const Model *m, PlaceCandidate *c, size_t *perm) {
    for (size_t i = 0; i < m->nv; i++)
        perm[i] = i;
    for (size_t i = m->nv; i > 1; i--) {
        size_t j = rndu((unsigned) i), t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
    for (size_t i = 0; i < m->nv; i++) {
        const MVolume *v = &m->v[perm[i]];
        c[i] = (PlaceCandidate) { .name = v->name, .index = v->index, .free_bytes = v->free_bytes,
                                  .free_inodes = v->free_inodes, .flags = v->flags };
        for (size_t k = 0; k < m->nw; k++) {
            const MWorkspace *w = &m->w[k];
            if (!w->active || w->volume != (int) perm[i])
                continue;
            if (c[i].n_workspaces == 0)
                c[i].tenant = w->tenant ?: "";
            else if (!streq(c[i].tenant, w->tenant ?: ""))
                c[i].mixed_tenants = true;
            c[i].n_workspaces++;
        }
    }
}

/* The rules, read literally, for one candidate. */
static bool eligible(const Model *m, const PlaceCandidate *c, const PlaceRequest *req) {
    if (c->flags)
        return false;
    if (req->sticky_volume)
        return streq(c->name, req->sticky_volume) && c->n_workspaces < m->cfg.workspaces_per_volume &&
               (!m->cfg.tenant_isolation || c->n_workspaces == 0 ||
                (!c->mixed_tenants && streq(c->tenant, req->tenant ?: "")));
    uint64_t need = req->quota ?: m->cfg.reserve_bytes;
    return c->n_workspaces < m->cfg.workspaces_per_volume &&
           (!m->cfg.tenant_isolation || c->n_workspaces == 0 ||
            (!c->mixed_tenants && streq(c->tenant, req->tenant ?: ""))) &&
           c->free_bytes >= need && c->free_inodes >= m->cfg.reserve_inodes;
}

static void check_invariants(const Model *m) {
    for (size_t v = 0; v < m->nv; v++) {
        unsigned n = count_on(m, (int) v);
        assert_true(n <= m->cfg.workspaces_per_volume);
        if (!m->cfg.tenant_isolation)
            continue;
        const char *t = NULL;
        for (size_t k = 0; k < m->nw; k++) {
            if (!m->w[k].active || m->w[k].volume != (int) v)
                continue;
            const char *wt = m->w[k].tenant ?: "";
            if (!t)
                t = wt;
            assert_string_equal(t, wt); /* never mixed under isolation */
        }
    }
    assert_true(m->nv <= m->cfg.max_volumes);
}

static size_t n_decisions, n_carves, n_refusals, n_sticky;

/* Decides twice (two candidate orders) and checks the result against the
 * rules. Returns the model volume chosen, -2 for a carve (done in the
 * model), -1 for a refusal. */
static int model_place(Model *m, const PlaceRequest *req) {
    PlaceCandidate c1[MAXV], c2[MAXV];
    size_t p1[MAXV], p2[MAXV];
    PlaceDecision d1 = {}, d2 = {};

    build_candidates(m, c1, p1);
    build_candidates(m, c2, p2);
    assert_int_equal(place_policy_decide(c1, m->nv, req, &m->cfg, &d1), 0);
    assert_int_equal(place_policy_decide(c2, m->nv, req, &m->cfg, &d2), 0);
    n_decisions++;

    /* Determinism: same inputs (in any order), same choice. */
    assert_int_equal(d1.action, d2.action);
    assert_int_equal(d1.reason, d2.reason);
    assert_non_null(d1.explanation);
    assert_true(strlen(d1.explanation) > 0);
    assert_string_equal(d1.explanation, d2.explanation);
    assert_int_equal(d1.n_verdicts, m->nv);

    size_t n_elig = 0;
    unsigned best = 0;
    bool have_best = false;
    for (size_t i = 0; i < m->nv; i++) {
        bool e = eligible(m, &c1[i], req);
        n_elig += e;
        if (e) {
            unsigned n = c1[i].n_workspaces;
            if (!have_best || (m->cfg.policy == PLACEMENT_SPREAD ? n < best : n > best))
                best = n;
            have_best = true;
        }
    }
    /* The verdicts agree with the rules. */
    for (size_t i = 0; i < d1.n_verdicts; i++) {
        const PlaceVerdict *v = &d1.verdicts[i];
        bool e = eligible(m, &c1[v->candidate], req);
        assert_int_equal(v->reason == PLACE_REASON_NONE, e);
        assert_int_equal(v->rank != 0, e);
    }

    int result = -1;
    switch (d1.action) {
    case PLACE_ACTION_USE: {
        assert_true(n_elig > 0);
        const PlaceCandidate *a = &c1[d1.candidate], *b = &c2[d2.candidate];
        assert_string_equal(a->name, b->name);
        assert_true(eligible(m, a, req));
        if (req->sticky_volume)
            assert_string_equal(a->name, req->sticky_volume);
        else
            assert_int_equal(a->n_workspaces, best); /* spread: fewest; pack: most */
        result = (int) p1[d1.candidate];
        break;
    }
    case PLACE_ACTION_CARVE: {
        assert_int_equal(n_elig, 0);
        assert_null(req->sticky_volume);
        assert_true(m->nv < m->cfg.max_volumes);
        assert_int_equal(d1.carve_index, d2.carve_index);
        for (size_t i = 0; i < m->nv; i++)
            assert_int_not_equal(m->v[i].index, d1.carve_index);
        MVolume *v = &m->v[m->nv];
        *v = (MVolume) { .index = d1.carve_index,
                         .free_bytes = m->space_limits ? (rndu(8) + 1) * 64 * MIB : 64 * GIB,
                         .free_inodes = m->space_limits ? rndu(3) * 4096 : 1000000 };
        snprintf(v->name, sizeof(v->name), "state-%u", d1.carve_index);
        n_carves++;
        result = (int) m->nv++;
        break;
    }
    case PLACE_ACTION_REFUSE:
        /* Every refusal has a reason and an explanation; none hides an
         * option the rules allowed. */
        assert_int_not_equal(d1.reason, PLACE_REASON_NONE);
        assert_int_equal(n_elig, 0);
        if (!req->sticky_volume && d1.reason != PLACE_REASON_TOO_BIG) {
            assert_int_equal(d1.reason, PLACE_REASON_POOL_FULL);
            assert_true(m->nv >= m->cfg.max_volumes);
            assert_non_null(strstr(d1.explanation, "max_volumes"));
        }
        n_refusals++;
        result = -1;
        break;
    default:
        fail();
    }
    place_decision_done(&d1);
    place_decision_done(&d2);
    return result;
}

static void random_config(Model *m) {
    *m = (Model) {};
    m->cfg = (PlacePoolConfig) {
        .pool_name = "state",
        .workspaces_per_volume = rndu(5) + 1,
        .max_volumes = rndu(MAXV) + 1,
        .policy = rndu(2) ? PLACEMENT_PACK : PLACEMENT_SPREAD,
        .tenant_isolation = rndu(2),
        .reserve_bytes = 64 * MIB,
        .reserve_inodes = 4096,
        .volume_size = 512 * MIB,
    };
    m->space_limits = rndu(3) == 0;
    /* Pre-carved volumes (min_volumes), some flagged. */
    unsigned pre = rndu(m->cfg.max_volumes + 1);
    for (unsigned i = 0; i < pre; i++) {
        MVolume *v = &m->v[m->nv++];
        *v = (MVolume) { .index = i, .free_bytes = m->space_limits ? rndu(8) * 64 * MIB : 64 * GIB,
                         .free_inodes = m->space_limits ? rndu(3) * 4096 : 1000000 };
        if (rndu(10) == 0)
            v->flags = 1U << rndu(3);
        snprintf(v->name, sizeof(v->name), "state-%u", i);
    }
}

static void run_sequence(Model *m, unsigned steps) {
    for (unsigned s = 0; s < steps; s++) {
        unsigned op = rndu(10);
        if (op < 6 && m->nw < MAXW) {
            /* create a new workspace */
            MWorkspace *w = &m->w[m->nw];
            snprintf(w->id, sizeof(w->id), "w%u", m->next_id++);
            w->tenant = tenants[rndu(ELEMENTSOF(tenants))];
            PlaceRequest req = { .id = w->id, .tenant = w->tenant,
                                 .quota = rndu(4) == 0 ? (rndu(4) + 1) * 64 * MIB : 0 };
            int v = model_place(m, &req);
            if (v >= 0) {
                w->volume = v;
                w->active = true;
                w->need = req.quota ?: m->cfg.reserve_bytes;
                if (m->v[v].free_bytes >= w->need)
                    m->v[v].free_bytes -= w->need;
                m->nw++;
            }
        } else if (op < 8 && m->nw > 0) {
            /* remove: keep data or destroy */
            size_t k = rndu((unsigned) m->nw);
            if (!m->w[k].active)
                continue;
            if (rndu(2)) {
                m->w[k].active = false;
            } else {
                m->v[m->w[k].volume].free_bytes += m->w[k].need;
                m->w[k] = m->w[--m->nw];
            }
        } else if (m->nw > 0) {
            /* re-create a kept one (stickiness) */
            size_t k = rndu((unsigned) m->nw);
            MWorkspace *w = &m->w[k];
            if (w->active)
                continue;
            PlaceRequest req = { .id = w->id, .tenant = w->tenant,
                                 .sticky_volume = m->v[w->volume].name };
            n_sticky++;
            int v = model_place(m, &req);
            if (v >= 0) {
                assert_int_equal(v, w->volume); /* back where its data is */
                w->active = true;
            }
        }
        check_invariants(m);
    }
}

static void test_properties_random(void **state) {
    rng_state = 0x5eed1a7011dULL;
    n_decisions = n_carves = n_refusals = n_sticky = 0;
    for (unsigned round = 0; round < 3000; round++) {
        Model m;
        random_config(&m);
        run_sequence(&m, 60);
    }
    /* The sequences must really exercise every path. */
    assert_true(n_decisions > 50000);
    assert_true(n_carves > 1000);
    assert_true(n_refusals > 1000);
    assert_true(n_sticky > 1000);
    print_message("property test: %zu decisions, %zu carves, %zu refusals, %zu sticky re-creates\n",
                  n_decisions, n_carves, n_refusals, n_sticky);
}

/* Spread keeps volumes balanced when space allows: with adds only and no
 * flags or tenants, max - min <= 1 over the volumes that existed before the
 * first carve, and an add never widens the spread beyond 1. */
static void test_spread_balance(void **state) {
    rng_state = 0xba1a9ceULL;
    for (unsigned round = 0; round < 2000; round++) {
        Model m = {};
        m.cfg = (PlacePoolConfig) { .pool_name = "state", .workspaces_per_volume = rndu(6) + 1,
                                    .max_volumes = rndu(MAXV) + 1, .policy = PLACEMENT_SPREAD,
                                    .reserve_bytes = MIB, .reserve_inodes = 1 };
        unsigned pre = rndu(m.cfg.max_volumes) + 1;
        for (unsigned i = 0; i < pre; i++) {
            m.v[m.nv] = (MVolume) { .index = i, .free_bytes = (rndu(4) + 1) * GIB,
                                    .free_inodes = 1000000 };
            snprintf(m.v[m.nv].name, sizeof(m.v[0].name), "state-%u", i);
            m.nv++;
        }
        unsigned adds = pre * m.cfg.workspaces_per_volume;
        for (unsigned k = 0; k < adds && m.nw < MAXW; k++) {
            MWorkspace *w = &m.w[m.nw];
            snprintf(w->id, sizeof(w->id), "w%u", k);
            PlaceRequest req = { .id = w->id };
            int v = model_place(&m, &req);
            assert_true(v >= 0 && (unsigned) v < pre); /* no carve while room exists */
            w->volume = v;
            w->active = true;
            m.nw++;
            unsigned lo = UINT32_MAX, hi = 0;
            for (unsigned i = 0; i < pre; i++) {
                unsigned n = count_on(&m, (int) i);
                lo = MIN(lo, n);
                hi = MAX(hi, n);
            }
            assert_true(hi - lo <= 1);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spread_order),
        cmocka_unit_test(test_pack_order),
        cmocka_unit_test(test_flags_space_inodes),
        cmocka_unit_test(test_tenant_isolation),
        cmocka_unit_test(test_pool_full_message),
        cmocka_unit_test(test_host_full),
        cmocka_unit_test(test_sticky),
        cmocka_unit_test(test_not_sticky_and_overcommit),
        cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_slow_flush),
        cmocka_unit_test(test_slow_flush_all_slow),
        cmocka_unit_test(test_properties_random),
        cmocka_unit_test(test_spread_balance),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
