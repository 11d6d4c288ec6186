/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for the pure planner: observations built by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include "plan.h"
#include "util.h"

static Layout *make_layout(void) {
    Layout *l = calloc(1, sizeof(*l));
    assert_non_null(l);
    l->root = strdup("/srv/l");
    l->version = 1;
    Pool *p = &l->pools[POOL_STATE];
    *p = (Pool) { .role = POOL_STATE, .declared = true, .backend = BACKEND_LOOP_EXT4, .volume_size = 256 * MIB,
                   .min_volumes = 1, .max_volumes = 4, .direct_io = true, .shards = 1,
                   .writeback = { .max_ratio = -1, .strict_limit = -1 } };
    return l;
}

/* One observed volume state-0. */
static Observation *make_obs(void) {
    Observation *o = calloc(1, sizeof(*o));
    assert_non_null(o);
    o->volumes = calloc(1, sizeof(VolumeObservation));
    o->n = 1;
    VolumeObservation *v = &o->volumes[0];
    v->name = strdup("state-0");
    v->role = POOL_STATE;
    v->backend = BACKEND_LOOP_EXT4;
    v->declared = true;
    v->backing_path = strdup("/srv/l/images/state-0.img");
    v->mount_path = strdup("/srv/l/volumes/state-0");
    return o;
}

static StateRecord *make_record(bool formatted, const char *uuid) {
    StateRecord *s = NULL;
    assert_int_equal(state_record_new(&s), 0);
    VolumeRecord r = { .name = (char *) "state-0", .role = POOL_STATE, .backend = BACKEND_LOOP_EXT4,
                       .backing_path = (char *) "/srv/l/images/state-0.img", .size = 256 * MIB,
                       .created_file = true, .formatted = formatted, .fs_type = (char *) "ext4",
                       .fs_uuid = (char *) uuid };
    assert_int_equal(state_record_add_volume(s, &r, NULL), 0);
    return s;
}

/* "create-file,attach,..." of the plan. */
static char *kinds(const Plan *p) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    for (size_t i = 0; i < p->n_steps; i++)
        fprintf(f, "%s%s", i ? "," : "", plan_step_kind_to_string(p->steps[i].kind));
    fclose(f);
    return buf;
}

static void expect(const Layout *l, const StateRecord *s, const Observation *o, const char *want, const char *reason) {
    Plan *p = NULL;
    assert_int_equal(plan_compute(l, s, o, &p), 0);
    char *k = kinds(p);
    assert_string_equal(k, want);
    if (reason) {
        bool found = false;
        for (size_t i = 0; i < p->n_steps; i++)
            found = found || streq_ptr(p->steps[i].reason, reason);
        assert_true(found);
    }
    char *t = NULL;
    assert_int_equal(plan_to_text(p, &t), 0);
    free(t);
    assert_int_equal(plan_to_json_string(p, &t), 0);
    free(t);
    free(k);
    plan_free(p);
}

static void set_probe(VolumeObservation *v, bool blank, const char *type, const char *uuid) {
    probe_result_done(&v->probe);
    v->probed = true;
    v->probe.blank = blank;
    v->probe.type = type ? strdup(type) : NULL;
    v->probe.uuid = uuid ? strdup(uuid) : NULL;
}

static void test_fresh(void **unused) {
    _cleanup_(layout_freep) Layout *l = make_layout();
    _cleanup_(observation_freep) Observation *o = make_obs();
    expect(l, NULL, o, "create-file,attach,format,mount", NULL);
}

static void test_in_service(void **unused) {
    _cleanup_(layout_freep) Layout *l = make_layout();
    _cleanup_(observation_freep) Observation *o = make_obs();
    _cleanup_(state_record_freep) StateRecord *s = make_record(true, "u-1");
    VolumeObservation *v = &o->volumes[0];
    v->file_exists = v->file_is_regular = true;
    v->file_size = 256 * MIB;
    set_probe(v, false, "ext4", "U-1"); /* case-insensitive */
    expect(l, s, o, "attach,mount", NULL);   /* after a reboot */
    v->attached = true;
    v->loop.direct_io = true;
    v->loop.node = strdup("/dev/loop7");
    v->mounted = v->mounted_ours = true;
    expect(l, s, o, "", NULL);               /* nothing to do */
    l->pools[POOL_STATE].volume_size = 512 * MIB;
    expect(l, s, o, "grow", NULL);
    l->pools[POOL_STATE].volume_size = 128 * MIB;
    expect(l, s, o, "refuse", "shrink");
    l->pools[POOL_STATE].volume_size = 256 * MIB;
    v->loop.direct_io = false;               /* buffered while mounted */
    expect(l, s, o, "drift", "buffered");
    v->mounted = v->mounted_ours = false;    /* buffered, unmounted: re-attach */
    expect(l, s, o, "detach,attach,mount", NULL);
    v->loop.direct_io = true;
    v->loop_mounted_elsewhere = true;
    v->loop_mount.target = strdup("/mnt/hand");
    expect(l, s, o, "drift", "mounted-elsewhere");
}

static void test_refusals(void **unused) {
    _cleanup_(layout_freep) Layout *l = make_layout();
    _cleanup_(observation_freep) Observation *o = make_obs();
    VolumeObservation *v = &o->volumes[0];
    v->file_exists = v->file_is_regular = true;
    v->file_size = 256 * MIB;
    set_probe(v, false, "ext4", "foreign");
    expect(l, NULL, o, "refuse", "not-ours");          /* no record */
    set_probe(v, true, NULL, NULL);
    expect(l, NULL, o, "refuse", "not-ours");          /* blank but not ours */

    _cleanup_(state_record_freep) StateRecord *s = make_record(true, "u-1");
    set_probe(v, false, "ext4", "u-2");
    expect(l, s, o, "refuse", "uuid-changed");         /* same type, other UUID */
    set_probe(v, false, "xfs", "u-1");
    expect(l, s, o, "refuse", "uuid-changed");
    set_probe(v, true, NULL, NULL);
    expect(l, s, o, "refuse", "signature-lost");       /* never re-format */
    v->file_exists = false;
    expect(l, s, o, "drift", "backing-deleted");       /* never silently re-create */
    v->file_exists = true;
    v->mounted = true;
    v->mount.source = strdup("/dev/sdz");
    expect(l, s, o, "refuse", "mount-path-busy");
    v->mounted = false;

    /* Not yet formatted: a blank file we created is formatted; our UUID
     * (chosen before mkfs) is adopted; anything else is refused. */
    _cleanup_(state_record_freep) StateRecord *s2 = make_record(false, "u-9");
    set_probe(v, true, NULL, NULL);
    expect(l, s2, o, "attach,format,mount", NULL);
    set_probe(v, false, "ext4", "u-9");
    expect(l, s2, o, "adopt,attach,mount", NULL);
    set_probe(v, false, "crypto_LUKS", "x");
    expect(l, s2, o, "refuse", "foreign-signature");

    l->pools[POOL_STATE].backend = BACKEND_LOOP_XFS;
    expect(l, s, o, "refuse", "backend-changed");
}

static void test_label(void **unused) {
    char *s = NULL;
    assert_int_equal(plan_volume_label("ext4", POOL_STATE, 0, "state-0", &s), 0);
    assert_string_equal(s, "ld-state-0");
    free(s);
    assert_int_equal(plan_volume_label("xfs", POOL_CONTENT, 1, "content-1", &s), 0);
    assert_string_equal(s, "ld-content-1");
    free(s);
    assert_int_equal(plan_volume_label("xfs", POOL_CONTENT, 12, "content-12", &s), 0);
    assert_string_equal(s, "ld-c12"); /* 13 chars > XFS's 12 */
    free(s);
    assert_int_equal(plan_step_kind_from_string("grow"), PLAN_STEP_GROW);
    assert_int_equal(plan_step_kind_from_string("nope"), _PLAN_STEP_KIND_INVALID);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fresh),
        cmocka_unit_test(test_in_service),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_label),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
