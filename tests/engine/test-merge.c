/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * engine_merge_observation on hand-made observations: a complete one
 * replaces the cache but for the entries kept, a partial one (a job on one
 * volume) replaces only its own entries, and the host's figures are the
 * fresh ones either way.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine.h"
#include "util.h"

/* An observation of `names` (NULL-terminated), each with fs_size `size`;
 * taken at `at`, with the host's free bytes `at` too (to tell them apart). */
static Observation *obs(uint64_t size, uint64_t at, const char *const *names) {
    Observation *o = calloc(1, sizeof(Observation));
    assert_non_null(o);
    for (const char *const *n = names; *n; n++) {
        VolumeObservation v = { .name = strdup(*n), .fs_size = size };
        assert_non_null(v.name);
        assert_int_equal(observation_put(o, &v), 0);
    }
    o->taken_at = at;
    o->has_backing_free = true;
    o->backing_free = at;
    o->backing_size = at * 2;
    return o;
}

static uint64_t size_of(const Engine *e, const char *name) {
    const VolumeObservation *v = observation_find(e->observation, name);
    return v ? v->fs_size : 0;
}

static bool keep_named(const char *name, void *userdata) {
    return streq(name, userdata);
}

static void test_merge_complete(void **state) {
    Engine e = {};
    /* nothing cached: the fresh one is it */
    assert_int_equal(engine_merge_observation(&e, obs(1, 10, (const char *[]) { "state-0", "state-1", NULL }), true,
                                              NULL, NULL),
                     0);
    assert_int_equal(e.observation->n, 2);
    assert_int_equal(size_of(&e, "state-0"), 1);
    /* nothing fresh: the cache stays */
    assert_int_equal(engine_merge_observation(&e, NULL, true, NULL, NULL), 0);
    assert_int_equal(e.observation->n, 2);

    /* complete: what it lacks goes, but for the kept entries */
    assert_int_equal(engine_merge_observation(&e, obs(2, 20, (const char *[]) { "state-0", "content-0", NULL }), true,
                                              keep_named, (void *) "state-1"),
                     0);
    assert_int_equal(e.observation->n, 3);
    assert_int_equal(size_of(&e, "state-0"), 2);
    assert_int_equal(size_of(&e, "state-1"), 1);
    assert_int_equal(size_of(&e, "content-0"), 2);
    assert_int_equal(e.observation->taken_at, 20);
    /* a kept entry wins over the fresh one of the same volume */
    assert_int_equal(engine_merge_observation(&e, obs(3, 30, (const char *[]) { "state-0", "state-1", NULL }), true,
                                              keep_named, (void *) "state-1"),
                     0);
    assert_int_equal(e.observation->n, 2);
    assert_int_equal(size_of(&e, "state-0"), 3);
    assert_int_equal(size_of(&e, "state-1"), 1);
    assert_null(observation_find(e.observation, "content-0"));
    /* without keep: replaced whole */
    assert_int_equal(engine_merge_observation(&e, obs(4, 40, (const char *[]) { "state-9", NULL }), true, NULL, NULL),
                     0);
    assert_int_equal(e.observation->n, 1);
    assert_int_equal(size_of(&e, "state-9"), 4);
    observation_free(e.observation);
}

static void test_merge_partial(void **state) {
    Engine e = {};
    assert_int_equal(engine_merge_observation(&e, obs(1, 10, (const char *[]) { "state-0", "state-1", NULL }), true,
                                              NULL, NULL),
                     0);
    /* a partial one: entries it lacks stay; kept entries keep their
     * figures, the others and new volumes are taken; the host's are fresh */
    assert_int_equal(engine_merge_observation(&e, obs(2, 20, (const char *[]) { "state-0", "state-1", "state-2", NULL }),
                                              false, keep_named, (void *) "state-1"),
                     0);
    assert_int_equal(e.observation->n, 3);
    assert_int_equal(size_of(&e, "state-0"), 2);
    assert_int_equal(size_of(&e, "state-1"), 1);
    assert_int_equal(size_of(&e, "state-2"), 2);
    assert_int_equal(e.observation->taken_at, 20);
    assert_int_equal(e.observation->backing_free, 20);
    assert_int_equal(e.observation->backing_size, 40);
    /* a volume kept but never cached is taken */
    assert_int_equal(engine_merge_observation(&e, obs(3, 30, (const char *[]) { "content-0", NULL }), false,
                                              keep_named, (void *) "content-0"),
                     0);
    assert_int_equal(e.observation->n, 4);
    assert_int_equal(size_of(&e, "content-0"), 3);
    assert_int_equal(size_of(&e, "state-0"), 2);
    observation_free(e.observation);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_complete),
        cmocka_unit_test(test_merge_partial),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
