/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The planner of the loop backends: one test per step sequence, refusal
 * and drift case, run once for each loop backend (loop-ext4, loop-xfs,
 * loop-btrfs: they differ only in the filesystem of their traits).
 * Observations are built by hand (no device). */
#include "plan-fixture.h"

/* The backend the group runs for, and its filesystem's type name. */
static Backend under_test;
#define FS (backend_traits(under_test)->fs->name)
/* Another filesystem than FS, for "same UUID, other type". */
#define OTHER_FS (streq(FS, "xfs") ? "ext4" : "xfs")

typedef struct Case {
    Layout *l;
    Observation *o;
    VolumeObservation *v;
    StateRecord *s;
} Case;

static int setup(void **state) {
    Case *c = calloc(1, sizeof(*c));
    c->l = fixture_layout(under_test, POOL_STATE);
    c->o = fixture_obs(under_test, POOL_STATE);
    c->v = &c->o->volumes[0];
    *state = c;
    return 0;
}

static int teardown(void **state) {
    Case *c = *state;
    layout_free(c->l);
    observation_free(c->o);
    state_record_free(c->s);
    free(c);
    return 0;
}

/* A formatted volume of ours, attached with DIO and mounted. */
static void in_service(Case *c) {
    c->s = fixture_record(c->v, true, true, FS, "u-1");
    c->v->file_exists = c->v->file_is_regular = true;
    c->v->file_size = 1 * GIB;
    fixture_probe(&c->v->probe, &c->v->probed, false, FS, "U-1"); /* UUIDs compare case-insensitively */
    c->v->attached = true;
    c->v->loop.direct_io = true;
    c->v->loop.node = strdup("/dev/loop7");
    c->v->mounted = c->v->mounted_ours = true;
    fixture_identify(c->v);
    c->v->mount.options = strdup("rw,nosuid,nodev,relatime");
}

static void test_fresh(void **state) {
    Case *c = *state;
    fixture_expect(c->l, NULL, c->o, "create-file,attach,format,mount,identify", NULL, false);
    c->l->pools[POOL_STATE].writeback.max_bytes = 64 * MIB;
    fixture_expect(c->l, NULL, c->o, "create-file,attach,format,mount,identify,set-limits", NULL, false);
}

static void test_nothing_to_do(void **state) {
    Case *c = *state;
    in_service(c);
    fixture_expect(c->l, c->s, c->o, "", NULL, false);
}

static void test_after_reboot(void **state) {
    Case *c = *state;
    in_service(c);
    c->v->attached = c->v->mounted = c->v->mounted_ours = false;
    fixture_expect(c->l, c->s, c->o, "attach,mount,identify", NULL, false);
}

static void test_grow(void **state) {
    Case *c = *state;
    in_service(c);
    c->l->pools[POOL_STATE].volume_size = 2 * GIB;
    fixture_expect(c->l, c->s, c->o, "grow", NULL, false);
    /* A grow that stopped half-way (file extended, fs not): the record's
     * size did not move, so it is planned again. */
    c->v->file_size = 2 * GIB;
    fixture_expect(c->l, c->s, c->o, "grow", NULL, false);
}

static void test_refuse_shrink(void **state) {
    Case *c = *state;
    in_service(c);
    c->l->pools[POOL_STATE].volume_size = 512 * MIB;
    /* A note: the volume stays in service at its size. */
    fixture_expect(c->l, c->s, c->o, "refuse", "shrink", false);
    /* Grown there by the pool's growth: no shrink is asked for. */
    c->l->pools[POOL_STATE].growth = (GrowthPolicy) { .enabled = true, .threshold = 80, .max_size = 4 * GIB };
    fixture_expect(c->l, c->s, c->o, "", NULL, false);
    /* ... unless it is past growth.max_size too (max_size lowered). */
    c->l->pools[POOL_STATE].growth.max_size = 768 * MIB;
    fixture_expect(c->l, c->s, c->o, "refuse", "shrink", false);
}

static void test_drift_buffered(void **state) {
    Case *c = *state;
    in_service(c);
    c->v->loop.direct_io = false;
    fixture_expect(c->l, c->s, c->o, "drift", "buffered", false);
}

static void test_reattach_buffered(void **state) {
    Case *c = *state;
    in_service(c);
    c->v->loop.direct_io = false;
    c->v->mounted = c->v->mounted_ours = false;
    fixture_expect(c->l, c->s, c->o, "detach,attach,mount,identify", NULL, false);
}

static void test_drift_mounted_elsewhere(void **state) {
    Case *c = *state;
    in_service(c);
    c->v->mounted = c->v->mounted_ours = false;
    c->v->loop_mounted_elsewhere = true;
    c->v->loop_mount.target = strdup("/mnt/hand");
    fixture_expect(c->l, c->s, c->o, "drift", "mounted-elsewhere", true);
}

/* The identity file at the volume's root: a volume of an older layoutd
 * (no identity recorded, no file) gets one; a file naming another volume,
 * or one that cannot be read, keeps the volume out of service. */
static void test_identity(void **state) {
    Case *c = *state;
    in_service(c);
    c->v->identity = mfree(c->v->identity);
    c->v->identity_error = ENOENT;
    fixture_expect(c->l, c->s, c->o, "identify", NULL, false);
    free(c->s->volumes[0]->identity);
    c->s->volumes[0]->identity = NULL;
    fixture_expect(c->l, c->s, c->o, "identify", NULL, false);
    c->v->identity = strdup("11111111-2222-4333-8444-555555555555");
    c->v->identity_error = 0;
    fixture_expect(c->l, c->s, c->o, "refuse", "identity-mismatch", true);
    c->s->volumes[0]->identity = strdup(FIXTURE_IDENTITY);
    fixture_expect(c->l, c->s, c->o, "refuse", "identity-mismatch", true);
    c->v->identity = mfree(c->v->identity);
    c->v->identity_error = EBADMSG;
    fixture_expect(c->l, c->s, c->o, "refuse", "identity-unreadable", true);
}

/* Mounted by an older layoutd without nosuid,nodev: said, not blocking. */
static void test_drift_mount_flags(void **state) {
    Case *c = *state;
    in_service(c);
    free(c->v->mount.options);
    c->v->mount.options = strdup("rw,relatime");
    fixture_expect(c->l, c->s, c->o, "drift", "mount-flags", false);
    free(c->v->mount.options);
    c->v->mount.options = strdup("rw,nosuid,relatime");
    fixture_expect(c->l, c->s, c->o, "drift", "mount-flags", false);
}

static void test_refuse_not_ours(void **state) {
    Case *c = *state;
    c->v->file_exists = c->v->file_is_regular = true;
    c->v->file_size = 1 * GIB;
    fixture_probe(&c->v->probe, &c->v->probed, false, FS, "foreign");
    fixture_expect(c->l, NULL, c->o, "refuse", "not-ours", true);
    fixture_probe(&c->v->probe, &c->v->probed, true, NULL, NULL); /* blank, but no record says it is ours */
    fixture_expect(c->l, NULL, c->o, "refuse", "not-ours", true);
}

static void test_refuse_uuid_changed(void **state) {
    Case *c = *state;
    in_service(c);
    fixture_probe(&c->v->probe, &c->v->probed, false, FS, "u-2");
    fixture_expect(c->l, c->s, c->o, "refuse", "uuid-changed", true);
    fixture_probe(&c->v->probe, &c->v->probed, false, OTHER_FS, "u-1"); /* same UUID, other type */
    fixture_expect(c->l, c->s, c->o, "refuse", "uuid-changed", true);
}

static void test_refuse_signature_lost(void **state) {
    Case *c = *state;
    in_service(c);
    fixture_probe(&c->v->probe, &c->v->probed, true, NULL, NULL);
    fixture_expect(c->l, c->s, c->o, "refuse", "signature-lost", true); /* never re-format */
}

static void test_drift_backing_deleted(void **state) {
    Case *c = *state;
    in_service(c);
    c->v->file_exists = c->v->attached = c->v->mounted = c->v->mounted_ours = false;
    fixture_expect(c->l, c->s, c->o, "drift", "backing-deleted", true); /* never silently re-create */
}

static void test_refuse_mount_path_busy(void **state) {
    Case *c = *state;
    in_service(c);
    c->v->mounted_ours = false;
    c->v->mount.source = strdup("/dev/sdz");
    fixture_expect(c->l, c->s, c->o, "refuse", "mount-path-busy", true);
}

static void test_refuse_backing_unreadable(void **state) {
    Case *c = *state;
    c->v->file_error = EACCES;
    fixture_expect(c->l, NULL, c->o, "refuse", "backing-unreadable", true);
}

static void test_refuse_not_regular(void **state) {
    Case *c = *state;
    c->v->file_exists = true;
    fixture_expect(c->l, NULL, c->o, "refuse", "not-regular", true);
}

static void test_refuse_probe_failed(void **state) {
    Case *c = *state;
    c->s = fixture_record(c->v, true, false, NULL, NULL);
    c->v->file_exists = c->v->file_is_regular = true;
    c->v->probe_error = EIO;
    fixture_expect(c->l, c->s, c->o, "refuse", "probe-failed", true);
}

static void test_unformatted_ours(void **state) {
    Case *c = *state;
    /* Not yet formatted: a blank file we created is formatted; our UUID
     * (chosen before mkfs) is adopted; anything else is refused. */
    c->s = fixture_record(c->v, true, false, FS, "u-9");
    c->v->file_exists = c->v->file_is_regular = true;
    c->v->file_size = 1 * GIB;
    fixture_probe(&c->v->probe, &c->v->probed, true, NULL, NULL);
    fixture_expect(c->l, c->s, c->o, "attach,format,mount,identify", NULL, false);
    fixture_probe(&c->v->probe, &c->v->probed, false, FS, "u-9");
    fixture_expect(c->l, c->s, c->o, "adopt,attach,mount,identify", NULL, false);
}

static void test_refuse_foreign_signature(void **state) {
    Case *c = *state;
    c->s = fixture_record(c->v, true, false, FS, "u-9");
    c->v->file_exists = c->v->file_is_regular = true;
    fixture_probe(&c->v->probe, &c->v->probed, false, "crypto_LUKS", "x");
    fixture_expect(c->l, c->s, c->o, "refuse", "foreign-signature", true);
    /* Our fs type with a UUID we never chose: foreign too. */
    fixture_probe(&c->v->probe, &c->v->probed, false, FS, "u-other");
    fixture_expect(c->l, c->s, c->o, "refuse", "foreign-signature", true);
}

static void test_refuse_backend_changed(void **state) {
    Case *c = *state;
    in_service(c);
    c->l->pools[POOL_STATE].backend = under_test == BACKEND_LOOP_XFS ? BACKEND_LOOP_BTRFS : BACKEND_LOOP_XFS;
    fixture_expect(c->l, c->s, c->o, "refuse", "backend-changed", true);
}

static void test_drift_not_declared(void **state) {
    Case *c = *state;
    in_service(c);
    c->v->declared = false;
    fixture_expect(c->l, c->s, c->o, "drift", "not-declared", false);
}

static void test_grow_plan(void **state) {
    Case *c = *state;
    in_service(c);
    Plan *p = NULL;
    assert_int_equal(volumes_plan_grow(c->l, c->s, c->o, "state-0", 2 * GIB, &p), 0);
    char *k = fixture_kinds(p);
    assert_string_equal(k, "grow");
    assert_int_equal(p->steps[0].size, 2 * GIB);
    /* The filesystem's own grow, from its row. */
    assert_string_equal(p->steps[0].fs_type, FS);
    const char *grow = under_test == BACKEND_LOOP_EXT4 ? "resize2fs"
                       : under_test == BACKEND_LOOP_XFS ? "xfs_growfs"
                                                        : "btrfs filesystem resize max";
    if (!strstr(p->steps[0].description, grow))
        fail_msg("grow step '%s' does not name %s", p->steps[0].description, grow);
    free(k);
    plan_free(p);
    assert_int_equal(volumes_plan_grow(c->l, c->s, c->o, "state-0", 1 * GIB, &p), 0);
    assert_true(plan_has_reason(p, "state-0", "shrink"));
    plan_free(p);
    c->v->mounted_ours = false;
    assert_int_equal(volumes_plan_grow(c->l, c->s, c->o, "state-0", 2 * GIB, &p), 0);
    assert_true(plan_has_reason(p, "state-0", "not-mounted"));
    plan_free(p);
    assert_int_equal(volumes_plan_grow(c->l, c->s, c->o, "state-9", 2 * GIB, &p), -ENOENT);
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
    assert_int_equal(plan_volume_label("btrfs", POOL_CONTENT, 12, "content-12", &s), 0);
    assert_string_equal(s, "ld-content-12"); /* btrfs takes 255 */
    free(s);
    assert_int_equal(plan_volume_label("zfs", POOL_STATE, 0, "state-0", &s), -EINVAL);
    assert_int_equal(plan_step_kind_from_string("grow"), PLAN_STEP_GROW);
    assert_int_equal(plan_step_kind_from_string("nope"), _PLAN_STEP_KIND_INVALID);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void) {
    const struct CMUnitTest tests[] = {
        T(test_fresh),
        T(test_nothing_to_do),
        T(test_after_reboot),
        T(test_grow),
        T(test_refuse_shrink),
        T(test_drift_buffered),
        T(test_reattach_buffered),
        T(test_drift_mounted_elsewhere),
        T(test_identity),
        T(test_drift_mount_flags),
        T(test_refuse_not_ours),
        T(test_refuse_uuid_changed),
        T(test_refuse_signature_lost),
        T(test_drift_backing_deleted),
        T(test_refuse_mount_path_busy),
        T(test_refuse_backing_unreadable),
        T(test_refuse_not_regular),
        T(test_refuse_probe_failed),
        T(test_unformatted_ours),
        T(test_refuse_foreign_signature),
        T(test_refuse_backend_changed),
        T(test_drift_not_declared),
        T(test_grow_plan),
    };
    const struct CMUnitTest pure[] = {
        cmocka_unit_test(test_label),
    };
    /* Every loop backend of the table: a new one is tested here as soon as
     * its traits name a filesystem. */
    int failed = 0;
    for (Backend b = 0; b < _BACKEND_MAX; b++) {
        const BackendTraits *t = backend_traits(b);
        if (!t->uses_loop || t->takes_vdo || !t->fs)
            continue;
        under_test = b;
        failed += _cmocka_run_group_tests(backend_to_string(b), tests, ELEMENTSOF(tests), NULL, NULL);
    }
    return failed + cmocka_run_group_tests_name("labels", pure, NULL, NULL);
}
