/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The vdo-xfs planner: every layer is a step of its own (attach,
 * vdo-format, dm-create, format, mount), and the refusals of both
 * signatures (VDO on the storage, XFS on the dm node). And dir. */
#include "plan-fixture.h"

typedef struct Case {
    Layout *l;
    Observation *o;
    VolumeObservation *v;
    StateRecord *s;
} Case;

static int setup(void **state) {
    Case *c = calloc(1, sizeof(*c));
    c->l = fixture_layout(BACKEND_VDO_XFS, POOL_CONTENT);
    c->o = fixture_obs(BACKEND_VDO_XFS, POOL_CONTENT);
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

/* Backing file attached, VDO super block on the loop device. */
static void storage(Case *c, bool formatted) {
    c->s = fixture_record(c->v, true, formatted, formatted ? "xfs" : NULL, formatted ? "x-1" : NULL);
    c->v->file_exists = c->v->file_is_regular = true;
    c->v->file_size = 1 * GIB;
    c->v->attached = true;
    c->v->loop.direct_io = true;
    c->v->loop.node = strdup("/dev/loop3");
    fixture_probe(&c->v->probe, &c->v->probed, false, "vdo", NULL);
}

/* ...and the target up with XFS on it, mounted. */
static void in_service(Case *c) {
    storage(c, true);
    c->v->dm_up = true;
    c->v->dm_node = strdup("/dev/mapper/layoutd-content-0");
    fixture_probe(&c->v->fs_probe, &c->v->fs_probed, false, "xfs", "x-1");
    c->v->mounted = c->v->mounted_ours = true;
    fixture_identify(c->v);
    c->v->mount.options = strdup("rw,nosuid,nodev,relatime");
    c->v->has_vdo_stats = true;
    c->v->vdo.has_message = true;
    c->v->vdo.logical_blocks = 4 * GIB / 4096;
}

static void test_fresh(void **state) {
    Case *c = *state;
    fixture_expect(c->l, NULL, c->o, "create-file,attach,vdo-format,dm-create,format,mount,identify", NULL, false);
}

static void test_nothing_to_do(void **state) {
    Case *c = *state;
    in_service(c);
    fixture_expect(c->l, c->s, c->o, "", NULL, false);
}

static void test_after_reboot(void **state) {
    Case *c = *state;
    storage(c, true);
    c->v->attached = false;
    fixture_expect(c->l, c->s, c->o, "attach,dm-create,mount,identify", NULL, false);
}

static void test_interrupted_before_vdoformat(void **state) {
    Case *c = *state;
    storage(c, false);
    fixture_probe(&c->v->probe, &c->v->probed, true, NULL, NULL);
    fixture_expect(c->l, c->s, c->o, "vdo-format,dm-create,format,mount,identify", NULL, false);
}

static void test_interrupted_before_mkfs(void **state) {
    Case *c = *state;
    storage(c, false);
    /* vdoformat ran, mkfs.xfs did not: the target comes up, XFS is made. */
    fixture_expect(c->l, c->s, c->o, "dm-create,format,mount,identify", NULL, false);
    c->v->dm_up = true;
    fixture_probe(&c->v->fs_probe, &c->v->fs_probed, true, NULL, NULL);
    fixture_expect(c->l, c->s, c->o, "format,mount,identify", NULL, false);
}

static void test_grow(void **state) {
    Case *c = *state;
    in_service(c);
    c->l->pools[POOL_CONTENT].volume_size = 2 * GIB;
    fixture_expect(c->l, c->s, c->o, "grow", NULL, false);
    c->l->pools[POOL_CONTENT].volume_size = 1 * GIB;
    c->l->pools[POOL_CONTENT].vdo.logical_size = 8 * GIB; /* logical growth alone */
    fixture_expect(c->l, c->s, c->o, "grow", NULL, false);
}

static void test_refuse_shrink(void **state) {
    Case *c = *state;
    in_service(c);
    c->l->pools[POOL_CONTENT].volume_size = 512 * MIB;
    fixture_expect(c->l, c->s, c->o, "refuse", "shrink", false);
}

static void test_refuse_grow_block_device(void **state) {
    Case *c = *state;
    /* VDO storage that is a block device, not a file layoutd can extend. */
    in_service(c);
    c->v->file_is_regular = false;
    Plan *p = NULL;
    assert_int_equal(volumes_plan_grow(c->l, c->s, c->o, "content-0", 2 * GIB, &p), 0);
    assert_true(plan_has_reason(p, "content-0", "block-device"));
    assert_int_equal(p->n_steps, 1);
    plan_free(p);
}

static void test_refuse_not_ours(void **state) {
    Case *c = *state;
    c->v->file_exists = c->v->file_is_regular = true;
    fixture_probe(&c->v->probe, &c->v->probed, false, "vdo", NULL);
    fixture_expect(c->l, NULL, c->o, "refuse", "not-ours", true);
}

static void test_refuse_foreign_storage(void **state) {
    Case *c = *state;
    storage(c, false);
    fixture_probe(&c->v->probe, &c->v->probed, false, "ext4", "e-1");
    fixture_expect(c->l, c->s, c->o, "refuse", "foreign-signature", true);
}

static void test_refuse_storage_signature_lost(void **state) {
    Case *c = *state;
    storage(c, true);
    fixture_probe(&c->v->probe, &c->v->probed, true, NULL, NULL);
    fixture_expect(c->l, c->s, c->o, "refuse", "signature-lost", true);
}

static void test_refuse_fs_uuid_changed(void **state) {
    Case *c = *state;
    in_service(c);
    fixture_probe(&c->v->fs_probe, &c->v->fs_probed, false, "xfs", "x-other");
    fixture_expect(c->l, c->s, c->o, "refuse", "uuid-changed", true);
}

static void test_refuse_fs_signature_lost(void **state) {
    Case *c = *state;
    in_service(c);
    c->v->mounted = c->v->mounted_ours = false;
    fixture_probe(&c->v->fs_probe, &c->v->fs_probed, true, NULL, NULL);
    fixture_expect(c->l, c->s, c->o, "refuse", "signature-lost", true);
}

static void test_drift_backing_deleted(void **state) {
    Case *c = *state;
    storage(c, true);
    c->v->file_exists = c->v->attached = false;
    fixture_expect(c->l, c->s, c->o, "drift", "backing-deleted", true);
}

static void test_refuse_device_missing(void **state) {
    Case *c = *state;
    c->l->pools[POOL_CONTENT].vdo.device = strdup("/dev/sdq");
    fixture_expect(c->l, NULL, c->o, "refuse", "device-missing", true);
}

static void test_drift_mounted_elsewhere(void **state) {
    Case *c = *state;
    in_service(c);
    c->v->mounted = c->v->mounted_ours = false;
    c->v->loop_mounted_elsewhere = true;
    c->v->loop_mount.target = strdup("/mnt/hand");
    fixture_expect(c->l, c->s, c->o, "drift", "mounted-elsewhere", true);
}

static void test_drift_buffered(void **state) {
    Case *c = *state;
    in_service(c);
    c->v->loop.direct_io = false;
    fixture_expect(c->l, c->s, c->o, "drift", "buffered", false);
}

static void test_dir(void **unused) {
    _cleanup_(layout_freep) Layout *l = fixture_layout(BACKEND_DIR, POOL_STATE);
    _cleanup_(observation_freep) Observation *o = fixture_obs(BACKEND_DIR, POOL_STATE);
    VolumeObservation *v = &o->volumes[0];
    fixture_expect(l, NULL, o, "create-dir,identify", NULL, false);
    v->dir_exists = true;
    fixture_expect(l, NULL, o, "adopt,identify", NULL, false);
    _cleanup_(state_record_freep) StateRecord *s = fixture_record(v, true, false, NULL, NULL);
    fixture_expect(l, s, o, "identify", NULL, false); /* recorded, but no identity file yet */
    fixture_identify(v);
    fixture_expect(l, s, o, "", NULL, false);
    /* A directory has no size: growing it is refused, not planned. */
    Plan *p = NULL;
    assert_int_equal(volumes_plan_grow(l, s, o, "state-0", 2 * GIB, &p), 0);
    assert_true(plan_has_reason(p, "state-0", "cannot-grow"));
    assert_int_equal(p->n_steps, 1);
    plan_free(p);
    v->mounted = true;
    fixture_expect(l, s, o, "refuse", "mount-path-busy", true);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void) {
    const struct CMUnitTest tests[] = {
        T(test_fresh),
        T(test_nothing_to_do),
        T(test_after_reboot),
        T(test_interrupted_before_vdoformat),
        T(test_interrupted_before_mkfs),
        T(test_grow),
        T(test_refuse_shrink),
        T(test_refuse_grow_block_device),
        T(test_refuse_not_ours),
        T(test_refuse_foreign_storage),
        T(test_refuse_storage_signature_lost),
        T(test_refuse_fs_uuid_changed),
        T(test_refuse_fs_signature_lost),
        T(test_drift_backing_deleted),
        T(test_refuse_device_missing),
        T(test_drift_mounted_elsewhere),
        T(test_drift_buffered),
        cmocka_unit_test(test_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
