/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The capacity policy on hand-made observations: how full, whether and how
 * far to grow, and what health each condition gives, with the message an
 * operator reads.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>
#include <linux/capability.h>

#include "capacity.h"
#include "util.h"

static Pool pool(Backend b, uint64_t size) {
    return (Pool) {
        .role = POOL_STATE,
        .declared = true,
        .backend = b,
        .volume_size = size,
        .direct_io = true,
        .capacity = { .warn = 80, .critical = 95 },
    };
}

static void enable_growth(Pool *p, uint64_t max) {
    p->growth = (GrowthPolicy) { .enabled = true, .threshold = 80, .max_size = max, .host_reserve_percent = 5 };
}

/* A mounted loop volume of `size` bytes with `used_pct` of its bytes and
 * `inodes_pct` of its inodes in use. */
static VolumeObservation volume(uint64_t size, unsigned used_pct, unsigned inodes_pct) {
    VolumeObservation v = {
        .name = (char *) "state-0",
        .role = POOL_STATE,
        .backend = BACKEND_LOOP_XFS,
        .declared = true,
        .backing_path = (char *) "/srv/images/state-0.img",
        .mount_path = (char *) "/srv/volumes/state-0",
        .file_exists = true,
        .file_is_regular = true,
        .file_size = size,
        .file_allocated = size, /* fully allocated: no promise outstanding */
        .attached = true,
        .loop = { .direct_io = true },
        .mounted = true,
        .mounted_ours = true,
        .has_statvfs = true,
        .fs_size = size,
        .fs_used = size * used_pct / 100,
        .fs_avail = size - size * used_pct / 100,
        .fs_inodes = 10000,
        .fs_inodes_free = 10000 - 100 * inodes_pct,
    };
    return v;
}

static Observation host(VolumeObservation *v, uint64_t free, uint64_t size) {
    return (Observation) { .volumes = v, .n = 1, .has_backing_free = true, .backing_free = free, .backing_size = size };
}

static void test_usage(void **state) {
    VolumeObservation v = volume(GIB, 50, 90);
    CapacityUsage u;
    capacity_usage(&v, &u);
    assert_true(u.known);
    assert_int_equal(u.bytes_percent, 50);
    assert_int_equal(u.inodes_percent, 90);
    assert_int_equal(u.percent, 90);
    assert_true(u.by_inodes);
    _cleanup_free_ char *d = NULL;
    assert_int_equal(capacity_usage_describe(&v, &u, &d), 0);
    assert_string_equal(d, "state-0 has used 90% of its inodes (9000 of 10000, 1000 free)");

    v = volume(GIB, 97, 10);
    capacity_usage(&v, &u);
    assert_int_equal(u.percent, 97);
    assert_false(u.by_inodes);
    free(d);
    d = NULL;
    assert_int_equal(capacity_usage_describe(&v, &u, &d), 0);
    assert_non_null(strstr(d, "state-0 is 97% full ("));

    v.has_statvfs = false;
    capacity_usage(&v, &u);
    assert_false(u.known);
}

static void test_host(void **state) {
    VolumeObservation v[2] = { volume(GIB, 10, 10), volume(4 * GIB, 10, 10) };
    v[0].file_allocated = GIB / 4;   /* promises 768 MiB more */
    v[1].file_is_regular = false;    /* a block device promises nothing */
    v[1].file_allocated = 0;
    Observation o = { .volumes = v, .n = 2, .has_backing_free = true, .backing_free = 10 * GIB, .backing_size = 100 * GIB };
    assert_int_equal(capacity_host_promised(&o), 768 * MIB);
    assert_int_equal(capacity_host_headroom(&o), 10 * GIB - 768 * MIB);
    GrowthPolicy g = { .host_reserve_percent = 5 };
    assert_int_equal(capacity_host_reserve(&g, &o), 5 * GIB);
    g = (GrowthPolicy) { .host_reserve = 2 * GIB };
    assert_int_equal(capacity_host_reserve(&g, &o), 2 * GIB);
    Pool p = pool(BACKEND_LOOP_EXT4, GIB); /* no growth: the default 5% */
    assert_int_equal(capacity_host_carvable(&p, &o), 5 * GIB - 768 * MIB);
    o.backing_free = MIB; /* less than the promise */
    assert_int_equal(capacity_host_headroom(&o), 0);
    assert_int_equal(capacity_host_carvable(&p, &o), 0);
}

static void test_growth(void **state) {
    GrowthEnv env = {}; /* every capability */
    Pool p = pool(BACKEND_LOOP_XFS, GIB);
    VolumeObservation v = volume(GIB, 85, 10);
    Observation o = host(&v, 100 * GIB, 200 * GIB);
    GrowthDecision d;

    /* off */
    assert_int_equal(capacity_growth_decide(&p, &v, &o, &env, &d), 0);
    assert_int_equal(d.action, GROWTH_NONE);
    enable_growth(&p, 8 * GIB);

    /* below the threshold */
    v = volume(GIB, 79, 79);
    assert_int_equal(capacity_growth_decide(&p, &v, &o, &env, &d), 0);
    assert_int_equal(d.action, GROWTH_NONE);

    /* bytes past it: double */
    v = volume(GIB, 85, 10);
    assert_int_equal(capacity_growth_decide(&p, &v, &o, &env, &d), 0);
    assert_int_equal(d.action, GROWTH_GROW);
    assert_int_equal(d.from, GIB);
    assert_int_equal(d.to, 2 * GIB);
    assert_non_null(strstr(d.message, "past growth.threshold (80%)"));
    growth_decision_done(&d);

    /* inodes past it, a fixed step */
    p.growth.step = 256 * MIB;
    v = volume(GIB, 10, 81);
    assert_int_equal(capacity_growth_decide(&p, &v, &o, &env, &d), 0);
    assert_int_equal(d.action, GROWTH_GROW);
    assert_int_equal(d.to, GIB + 256 * MIB);
    assert_non_null(strstr(d.message, "of its inodes"));
    growth_decision_done(&d);
    /* a step that would wrap 64 bits still stops at max_size */
    p.growth.step = UINT64_MAX - MIB;
    v = volume(6 * GIB, 90, 10);
    assert_int_equal(capacity_growth_decide(&p, &v, &o, &env, &d), 0);
    assert_int_equal(d.action, GROWTH_GROW);
    assert_int_equal(d.to, 8 * GIB);
    growth_decision_done(&d);
    p.growth.step = 0;

    /* capped at max_size, then refused there */
    v = volume(6 * GIB, 90, 10);
    assert_int_equal(capacity_growth_decide(&p, &v, &o, &env, &d), 0);
    assert_int_equal(d.action, GROWTH_GROW);
    assert_int_equal(d.to, 8 * GIB);
    growth_decision_done(&d);
    v = volume(8 * GIB, 90, 10);
    assert_int_equal(capacity_growth_decide(&p, &v, &o, &env, &d), 0);
    assert_int_equal(d.action, GROWTH_REFUSE);
    assert_string_equal(d.reason, "at-max");
    assert_non_null(strstr(d.message, "raise growth.max_size of pool 'state'"));
    growth_decision_done(&d);

    /* the host: reserve 5% of 200 GiB = 10 GiB; 10.5 GiB free leaves
     * 512 MiB, half a step: worth taking */
    v = volume(GIB, 90, 10);
    o = host(&v, 10 * GIB + 512 * MIB, 200 * GIB);
    assert_int_equal(capacity_growth_decide(&p, &v, &o, &env, &d), 0);
    assert_int_equal(d.action, GROWTH_GROW);
    assert_int_equal(d.to, GIB + 512 * MIB);
    growth_decision_done(&d);
    /* 64 MiB past the reserve: a sliver, refused */
    o = host(&v, 10 * GIB + 64 * MIB, 200 * GIB);
    assert_int_equal(capacity_growth_decide(&p, &v, &o, &env, &d), 0);
    assert_int_equal(d.action, GROWTH_REFUSE);
    assert_string_equal(d.reason, "host-short");
    assert_non_null(strstr(d.message, "lower growth.host_reserve"));
    growth_decision_done(&d);
    /* a sparse file's unallocated part is promised: it counts as taken */
    v.file_allocated = GIB / 2;
    o = host(&v, 10 * GIB + 512 * MIB, 200 * GIB);
    assert_int_equal(capacity_growth_decide(&p, &v, &o, &env, &d), 0);
    assert_int_equal(d.action, GROWTH_REFUSE);
    growth_decision_done(&d);

    /* ext4 without CAP_SYS_RESOURCE */
    p = pool(BACKEND_LOOP_EXT4, GIB);
    enable_growth(&p, 8 * GIB);
    v = volume(GIB, 90, 10);
    v.backend = BACKEND_LOOP_EXT4;
    o = host(&v, 100 * GIB, 200 * GIB);
    env.missing_capabilities = UINT64_C(1) << CAP_SYS_RESOURCE;
    assert_int_equal(capacity_growth_decide(&p, &v, &o, &env, &d), 0);
    assert_int_equal(d.action, GROWTH_REFUSE);
    assert_string_equal(d.reason, "no-capability");
    assert_non_null(strstr(d.message, "ext4 online resize needs CAP_SYS_RESOURCE"));
    /* The backends that do grow here, from the table. */
    assert_non_null(strstr(d.message, "or use loop-xfs or loop-btrfs"));
    growth_decision_done(&d);
    assert_int_equal(capacity_growable(&p, &v, &o, &env), 0);

    /* XFS and btrfs need only CAP_SYS_ADMIN: they grow without it ... */
    for (Backend b = BACKEND_LOOP_XFS; b <= BACKEND_LOOP_BTRFS; b++) {
        p = pool(b, GIB);
        enable_growth(&p, 8 * GIB);
        v.backend = b;
        assert_int_equal(capacity_growth_decide(&p, &v, &o, &env, &d), 0);
        assert_int_equal(d.action, GROWTH_GROW);
        growth_decision_done(&d);
        assert_true(capacity_growable(&p, &v, &o, &env) > 0);
    }
    /* ... and not without CAP_SYS_ADMIN. */
    env.missing_capabilities = UINT64_C(1) << CAP_SYS_ADMIN;
    assert_int_equal(capacity_growth_decide(&p, &v, &o, &env, &d), 0);
    assert_int_equal(d.action, GROWTH_REFUSE);
    assert_non_null(strstr(d.message, "btrfs online resize needs CAP_SYS_ADMIN"));
    growth_decision_done(&d);
    p = pool(BACKEND_LOOP_EXT4, GIB);
    enable_growth(&p, 8 * GIB);
    v.backend = BACKEND_LOOP_EXT4;

    /* not mounted: nothing to decide */
    v.mounted_ours = false;
    assert_int_equal(capacity_growth_decide(&p, &v, &o, &env, &d), 0);
    assert_int_equal(d.action, GROWTH_NONE);
}

static const VolumeFinding *finding(const VolumeAssessment *a, const char *code) {
    for (size_t i = 0; i < a->n; i++)
        if (streq(a->findings[i].code, code))
            return &a->findings[i];
    return NULL;
}

static void test_health(void **state) {
    Pool p = pool(BACKEND_LOOP_XFS, GIB);
    VolumeObservation v = volume(GIB, 50, 50);
    VolumeAssessment a;

    assert_int_equal(capacity_assess(&p, &v, NULL, &a), 0);
    assert_int_equal(a.health, VOLUME_HEALTH_OK);
    assert_int_equal(a.n, 0);

    /* warn, then critical */
    v = volume(GIB, 85, 10);
    assert_int_equal(capacity_assess(&p, &v, NULL, &a), 0);
    assert_int_equal(a.health, VOLUME_HEALTH_WARNING);
    assert_non_null(finding(&a, "filling"));
    assert_non_null(strstr(a.findings[0].message, "state-0 is 85% full"));
    assert_non_null(strstr(a.findings[0].message, "past capacity.warn (80%)"));
    assert_non_null(strstr(a.findings[0].message, "give pool growth:"));
    volume_assessment_done(&a);
    v = volume(GIB, 10, 96);
    assert_int_equal(capacity_assess(&p, &v, NULL, &a), 0);
    assert_int_equal(a.health, VOLUME_HEALTH_DEGRADED);
    assert_non_null(finding(&a, "inodes-full"));
    volume_assessment_done(&a);

    /* btrfs allocates inodes as it goes and statfs reports none (f_files
     * = 0): never full by inodes */
    Pool pb = pool(BACKEND_LOOP_BTRFS, GIB);
    v = volume(GIB, 50, 0);
    v.backend = BACKEND_LOOP_BTRFS;
    v.fs_inodes = v.fs_inodes_free = 0;
    CapacityUsage u;
    capacity_usage(&v, &u);
    assert_true(u.known);
    assert_false(u.by_inodes);
    assert_int_equal(u.percent, 50);
    assert_int_equal(capacity_assess(&pb, &v, NULL, &a), 0);
    assert_int_equal(a.health, VOLUME_HEALTH_OK);
    volume_assessment_done(&a);

    /* objects workspaces reference and the pool lacks: degraded, said */
    Pool pc = pool(BACKEND_LOOP_XFS, GIB);
    pc.role = POOL_CONTENT;
    v = volume(GIB, 10, 10);
    assert_int_equal(capacity_assess(&pc, &v, &(HealthInputs) { .objects_missing = 3, .missing_workspaces = 2,
                                                                 .missing_example = "9f3c00" }, &a), 0);
    assert_int_equal(a.health, VOLUME_HEALTH_DEGRADED);
    assert_non_null(finding(&a, "objects-missing"));
    assert_non_null(strstr(finding(&a, "objects-missing")->message, "3 object(s) that 2 workspace(s) reference"));
    assert_non_null(strstr(finding(&a, "objects-missing")->message, "9f3c00"));
    volume_assessment_done(&a);

    /* with growth on, a warning is growth's to handle; critical is not */
    enable_growth(&p, 8 * GIB);
    v = volume(GIB, 85, 10);
    assert_int_equal(capacity_assess(&p, &v, &(HealthInputs) { .growing = true }, &a), 0);
    assert_int_equal(a.health, VOLUME_HEALTH_OK);
    volume_assessment_done(&a);
    v = volume(GIB, 96, 10);
    assert_int_equal(capacity_assess(&p, &v, &(HealthInputs) { .growing = true }, &a), 0);
    assert_int_equal(a.health, VOLUME_HEALTH_DEGRADED);
    assert_non_null(strstr(finding(&a, "full")->message, "has not caught up"));
    volume_assessment_done(&a);

    /* growth refused: the warning is back, and the refusal degrades */
    GrowthDecision refused = { .action = GROWTH_REFUSE, .reason = "at-max", .message = (char *) "state-0 ... at max" };
    v = volume(GIB, 85, 10);
    assert_int_equal(capacity_assess(&p, &v, &(HealthInputs) { .growth = &refused }, &a), 0);
    assert_int_equal(a.health, VOLUME_HEALTH_DEGRADED);
    assert_string_equal(a.findings[0].code, "growth-refused"); /* worst first */
    assert_non_null(finding(&a, "filling"));
    volume_assessment_done(&a);
    assert_int_equal(capacity_assess(&p, &v, &(HealthInputs) { .growth_error = "resize2fs: EPERM" }, &a), 0);
    assert_int_equal(a.health, VOLUME_HEALTH_DEGRADED);
    assert_non_null(finding(&a, "growth-failed"));
    volume_assessment_done(&a);

    /* a full volume seen by the probe */
    v = volume(GIB, 50, 10);
    assert_int_equal(capacity_assess(&p, &v, &(HealthInputs) { .probe_error = ENOSPC }, &a), 0);
    assert_int_equal(a.health, VOLUME_HEALTH_DEGRADED);
    assert_non_null(finding(&a, "probe-no-space"));
    volume_assessment_done(&a);
    assert_int_equal(capacity_assess(&p, &v, &(HealthInputs) { .probe_error = EROFS }, &a), 0);
    assert_non_null(finding(&a, "probe-read-only"));
    volume_assessment_done(&a);

    /* writes failing while mounted rw */
    v.fs_emergency_ro = true;
    assert_int_equal(capacity_assess(&p, &v, NULL, &a), 0);
    assert_int_equal(a.health, VOLUME_HEALTH_DEGRADED);
    assert_non_null(finding(&a, "fs-emergency-ro"));
    volume_assessment_done(&a);
    v.fs_emergency_ro = false;
    v.fs_shutdown = true;
    assert_int_equal(capacity_assess(&p, &v, NULL, &a), 0);
    assert_non_null(finding(&a, "fs-shutdown"));
    volume_assessment_done(&a);
    v.fs_shutdown = false;
    v.fs_read_only = true;
    v.has_fs_errors = true;
    v.fs_errors = 3;
    assert_int_equal(capacity_assess(&p, &v, NULL, &a), 0);
    assert_non_null(finding(&a, "read-only"));
    assert_non_null(strstr(finding(&a, "fs-errors")->message, "3 errors"));
    volume_assessment_done(&a);
    /* The runbook names the filesystem's own counter and checker. */
    v.mount.fstype = (char *) "ext4";
    assert_int_equal(capacity_assess(&p, &v, NULL, &a), 0);
    assert_non_null(strstr(finding(&a, "fs-errors")->message, "ext4 recorded 3 errors (errors_count); check it with e2fsck"));
    volume_assessment_done(&a);
    v.mount.fstype = (char *) "btrfs";
    assert_int_equal(capacity_assess(&p, &v, NULL, &a), 0);
    assert_non_null(strstr(finding(&a, "fs-errors")->message, "btrfs recorded 3 errors (device stats); check it with btrfs check"));
    volume_assessment_done(&a);
    v.mount.fstype = NULL;
    v.fs_shutdown = true;
    assert_int_equal(capacity_assess(&p, &v, NULL, &a), 0);
    assert_non_null(strstr(finding(&a, "fs-shutdown")->message, "XFS shut down")); /* from the traits */
    assert_non_null(strstr(finding(&a, "fs-shutdown")->message, "(xfs_repair)"));
    volume_assessment_done(&a);

    /* direct I/O refused by the kernel */
    v = volume(GIB, 10, 10);
    v.loop.direct_io = false;
    assert_int_equal(capacity_assess(&p, &v, NULL, &a), 0);
    assert_int_equal(a.health, VOLUME_HEALTH_DEGRADED);
    assert_non_null(finding(&a, "direct-io-refused"));
    volume_assessment_done(&a);

    /* out of service beats everything; the apply's word is kept */
    v.mounted_ours = false;
    assert_int_equal(capacity_assess(&p, &v, &(HealthInputs) { .out_of_service = "mkfs failed" }, &a), 0);
    assert_int_equal(a.health, VOLUME_HEALTH_FAILED);
    assert_int_equal(a.n, 1);
    assert_string_equal(a.findings[0].message, "state-0 is out of service: mkfs failed");
    volume_assessment_done(&a);

    /* a volume the layout no longer declares: default thresholds */
    v = volume(GIB, 81, 10);
    assert_int_equal(capacity_assess(NULL, &v, NULL, &a), 0);
    assert_int_equal(a.health, VOLUME_HEALTH_WARNING);
    volume_assessment_done(&a);

    assert_string_equal(volume_health_to_string(VOLUME_HEALTH_WARNING), "warning");
    assert_int_equal(volume_health_from_string("degraded"), VOLUME_HEALTH_DEGRADED);
}

static void test_slots(void **state) {
    Pool p = pool(BACKEND_LOOP_XFS, GIB);
    p.workspace_reserve = 100 * MIB;
    p.workspace_reserve_inodes = 4096;
    VolumeObservation v = volume(GIB, 50, 10);
    assert_true(capacity_volume_accepts(&p, &v, VOLUME_HEALTH_OK, 0));
    assert_true(capacity_volume_accepts(&p, &v, VOLUME_HEALTH_WARNING, 0));
    assert_false(capacity_volume_accepts(&p, &v, VOLUME_HEALTH_DEGRADED, 0));
    assert_false(capacity_volume_accepts(&p, &v, VOLUME_HEALTH_FAILED, 0));
    /* short of the reserve's bytes, unless growth can add them */
    v = volume(GIB, 95, 10);
    assert_false(capacity_volume_accepts(&p, &v, VOLUME_HEALTH_OK, 0));
    assert_true(capacity_volume_accepts(&p, &v, VOLUME_HEALTH_OK, 100 * MIB));
    /* short of inodes */
    v = volume(GIB, 10, 70); /* 3000 free */
    assert_false(capacity_volume_accepts(&p, &v, VOLUME_HEALTH_OK, 0));
    v.fs_inodes_free = 4096;
    assert_true(capacity_volume_accepts(&p, &v, VOLUME_HEALTH_OK, 0));
    p.workspace_reserve_inodes = 0; /* no reserve: an empty table still takes one */
    v.fs_inodes_free = 0;
    assert_true(capacity_volume_accepts(&p, &v, VOLUME_HEALTH_OK, 0));
    /* not measured, not in service */
    v = volume(GIB, 10, 10);
    v.has_statvfs = false;
    assert_false(capacity_volume_accepts(&p, &v, VOLUME_HEALTH_OK, 0));
    v = volume(GIB, 10, 10);
    v.mounted_ours = false;
    assert_false(capacity_volume_accepts(&p, &v, VOLUME_HEALTH_OK, 0));

    /* carving: the pool's limit, refused indexes, the host's room */
    const char *limit = NULL;
    p.max_volumes = 8;
    assert_int_equal(capacity_pool_carvable(&p, NULL, 3, 0, &limit), 5);
    assert_string_equal(limit, "max_volumes");
    assert_int_equal(capacity_pool_carvable(&p, NULL, 3, 2, &limit), 3);
    assert_string_equal(limit, "refused");
    assert_int_equal(capacity_pool_carvable(&p, NULL, 8, 1, &limit), 0);
    assert_string_equal(limit, "max_volumes");
    v = volume(GIB, 10, 10);
    Observation o = host(&v, 4 * GIB + GIB / 2, 10 * GIB); /* 5% reserve: 512 MiB; 4 GiB carvable */
    assert_int_equal(capacity_pool_carvable(&p, &o, 3, 0, &limit), 4);
    assert_string_equal(limit, "host-space");
    assert_int_equal(capacity_pool_carvable(&p, &o, 6, 0, NULL), 2);
    Pool d = p;
    d.backend = BACKEND_DIR; /* no backing file: the host does not limit it */
    assert_int_equal(capacity_pool_carvable(&d, &o, 3, 0, &limit), 5);
    assert_string_equal(limit, "max_volumes");
}

/* /v1/capacity's sums: bytes over measured volumes, slots only on volumes
 * that accept, carvable volumes' slots, quota room only where enforced. */
static void test_report(void **state) {
    Pool p = pool(BACKEND_LOOP_XFS, GIB);
    p.max_volumes = 4;
    p.workspaces_per_volume = 3;
    p.workspace_reserve = 100 * MIB;
    p.quota_overcommit = 150;
    VolumeObservation v[3] = { volume(GIB, 50, 10), volume(GIB, 95, 10), volume(GIB, 10, 10) };
    v[2].has_statvfs = false; /* not measured: counted, not summed */
    CapacityReportVolume in[3] = {
        { .observation = &v[0], .health = VOLUME_HEALTH_OK, .growable = 0, .workspaces = 1,
          .quota_bytes = GIB, .quota_enforced = true },
        /* full, and growth cannot help: no slot */
        { .observation = &v[1], .health = VOLUME_HEALTH_WARNING, .growable = 0, .workspaces = 0,
          .quota_bytes = 2 * GIB, .quota_enforced = true },
        { .observation = &v[2], .health = VOLUME_HEALTH_OK, .growable = 0, .workspaces = 2,
          .quota_bytes = 0, .quota_enforced = true },
    };
    CapacityPoolReport r;
    capacity_pool_report(&p, NULL, in, 3, 0, &r);
    assert_int_equal(r.volumes, 3);
    assert_int_equal(r.size_bytes, 2 * GIB);
    assert_int_equal(r.used_bytes, v[0].fs_used + v[1].fs_used);
    assert_int_equal(r.free_bytes, v[0].fs_avail + v[1].fs_avail);
    assert_int_equal(r.workspaces, 3);
    assert_int_equal(r.volumes_accepting, 1);
    /* 2 free on v[0], and one volume to carve (4 - 3) of 3 */
    assert_int_equal(r.carvable_volumes, 1);
    assert_string_equal(r.carvable_limit, "max_volumes");
    assert_int_equal(r.carvable_bytes, GIB);
    assert_int_equal(r.workspace_slots, 12);
    assert_int_equal(r.workspace_slots_free, 2 + 3);
    /* 150 % of 1 GiB less 1 GiB; v[1] promised more than it may; v[2]
     * unmeasured */
    assert_int_equal(r.quota_bytes, 3 * GIB);
    assert_int_equal(r.quota_bytes_free, GIB / 2);

    /* growth: counts as free for a slot and as size for the quota room */
    in[1].growable = GIB;
    in[0].quota_enforced = false;
    capacity_pool_report(&p, NULL, in, 3, 1, &r);
    assert_int_equal(r.growable_bytes, GIB);
    assert_int_equal(r.volumes_accepting, 2);
    assert_int_equal(r.refused_volumes, 1);
    assert_int_equal(r.carvable_volumes, 0);
    assert_string_equal(r.carvable_limit, "refused");
    assert_int_equal(r.workspace_slots_free, 2 + 3);
    assert_int_equal(r.quota_bytes_free, GIB);
    /* a full volume takes nothing, whatever its health */
    in[0].workspaces = 3;
    in[1].health = VOLUME_HEALTH_DEGRADED;
    capacity_pool_report(&p, NULL, in, 3, 1, &r);
    assert_int_equal(r.volumes_accepting, 0);
    assert_int_equal(r.workspace_slots_free, 0);

    /* other pools: bytes only */
    Pool c = pool(BACKEND_LOOP_XFS, GIB);
    c.role = POOL_CONTENT;
    c.max_volumes = 4;
    c.workspaces_per_volume = 3;
    capacity_pool_report(&c, NULL, in, 2, 0, &r);
    assert_int_equal(r.volumes, 2);
    assert_int_equal(r.size_bytes, 2 * GIB);
    assert_int_equal(r.growable_bytes, GIB);
    assert_int_equal(r.workspaces, 0);
    assert_int_equal(r.workspace_slots, 0);
    assert_int_equal(r.workspace_slots_free, 0);
    assert_int_equal(r.quota_bytes, 0);
    assert_null(r.carvable_limit);
}

static json_object *problem(json_object *list, const char *code) {
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        json_object *p = json_object_array_get_idx(list, i);
        if (streq(json_object_get_string(json_object_object_get(p, "code")), code))
            return p;
    }
    return NULL;
}

static const char *field(json_object *p, const char *k) {
    return json_object_get_string(json_object_object_get(p, k));
}

static void test_problems(void **state) {
    json_object *l = NULL;
    VolumeHealth worst;

    /* nothing to say */
    ProblemInputs in = { .root = "/srv/layoutd" };
    assert_int_equal(capacity_problems(&in, &l, &worst), 0);
    assert_int_equal(json_object_array_length(l), 0);
    assert_int_equal(worst, VOLUME_HEALTH_OK);
    json_object_put(l);

    /* a volume's findings, only when observed and declared (or recorded) */
    VolumeObservation v[2] = { volume(GIB, 10, 10), volume(GIB, 10, 10) };
    v[1].name = (char *) "state-1";
    v[1].declared = false;
    Observation o = { .volumes = v, .n = 2 };
    VolumeFinding f = { .level = VOLUME_HEALTH_WARNING, .code = "filling", .message = (char *) "state-0 is 85% full" };
    VolumeAssessment as = { .health = VOLUME_HEALTH_WARNING, .findings = &f, .n = 1 };
    VolumeFinding f1 = { .level = VOLUME_HEALTH_FAILED, .code = "out-of-service", .message = (char *) "gone" };
    VolumeAssessment as1 = { .health = VOLUME_HEALTH_FAILED, .findings = &f1, .n = 1 };
    ProblemVolume pv[3] = { { "state-0", &as }, { "state-1", &as1 }, { "state-2", &as1 } };
    in = (ProblemInputs) { .volumes = pv, .n_volumes = 3, .observation = &o, .root = "/srv/layoutd" };
    assert_int_equal(capacity_problems(&in, &l, &worst), 0);
    assert_int_equal(json_object_array_length(l), 1);
    assert_int_equal(worst, VOLUME_HEALTH_WARNING);
    json_object *p = problem(l, "filling");
    assert_non_null(p);
    assert_string_equal(field(p, "volume"), "state-0");
    assert_string_equal(field(p, "level"), "warning");
    assert_string_equal(field(p, "message"), "state-0 is 85% full");
    json_object_put(l);

    /* the latest apply: a refused volume not in service, notes, a refused change */
    _cleanup_(apply_result_freep) ApplyResult *res = NULL;
    assert_int_equal(apply_result_new(&res), 0);
    ApplyVolumeResult *r = apply_result_add_volume(res, "state-3");
    apply_volume_result_fail(r, APPLY_OUTCOME_REFUSED, -EEXIST, "a foreign file at state-3.img");
    r->reason = strdup("foreign-signature");
    r = apply_result_add_volume(res, "state-0");
    apply_volume_result_note(r, "direct I/O refused: buffered");
    assert_non_null(apply_volume_result_add_step(r, PLAN_STEP_REFUSE, "shrink state-0 from 1G to 512M: refused"));
    in.results = res;
    assert_int_equal(capacity_problems(&in, &l, &worst), 0);
    assert_int_equal(json_object_array_length(l), 4);
    assert_int_equal(worst, VOLUME_HEALTH_DEGRADED);
    p = problem(l, "foreign-signature");
    assert_non_null(p);
    assert_string_equal(field(p, "message"), "state-3 was refused and is not used: a foreign file at state-3.img");
    assert_string_equal(field(problem(l, "note"), "message"), "state-0: direct I/O refused: buffered");
    assert_string_equal(field(problem(l, "refused-change"), "message"), "shrink state-0 from 1G to 512M: refused");
    json_object_put(l);

    /* workspaces: crash loop (failed), backoff, objects missing, blocked */
    ProblemWorkspace ws[4] = {
        { .id = "w1", .state = PROBLEM_DAEMON_CRASH_LOOP },
        { .id = "w2", .state = PROBLEM_DAEMON_BACKOFF },
        { .id = "w3", .objects_missing = 2, .missing_example = "sha256-ab" },
        { .id = "w4", .state = PROBLEM_DAEMON_BLOCKED, .blocker = "its state volume state-1 is out of service" },
    };
    in = (ProblemInputs) { .workspaces = ws, .n_workspaces = 4, .root = "/srv/layoutd" };
    assert_int_equal(capacity_problems(&in, &l, &worst), 0);
    assert_int_equal(json_object_array_length(l), 4);
    assert_int_equal(worst, VOLUME_HEALTH_FAILED);
    p = problem(l, "crash-loop");
    assert_string_equal(field(p, "workspace"), "w1");
    assert_string_equal(field(p, "level"), "failed");
    assert_non_null(strstr(field(p, "message"), "`layoutctl restart w1`"));
    assert_string_equal(field(problem(l, "backoff"), "level"), "degraded");
    assert_non_null(strstr(field(problem(l, "objects-missing"), "message"), "w3: 2 object(s)"));
    assert_non_null(strstr(field(problem(l, "objects-missing"), "message"), "(one is sha256-ab)"));
    assert_string_equal(field(problem(l, "blocked"), "message"),
                        "w4: not started while its state volume state-1 is out of service; it starts by itself "
                        "once the volume is back in service");
    json_object_put(l);

    /* the host: overcommitted, then low; an unsaved record; a refused reload */
    VolumeObservation hv = volume(GIB, 10, 10);
    hv.file_allocated = 0; /* promises 1 GiB */
    Observation ho = host(&hv, GIB / 2, 100 * GIB);
    in = (ProblemInputs) { .observation = &ho, .root = "/srv/layoutd" };
    assert_int_equal(capacity_problems(&in, &l, &worst), 0);
    assert_int_equal(worst, VOLUME_HEALTH_DEGRADED);
    p = problem(l, "host-overcommitted");
    assert_string_equal(field(p, "host"), "/srv/layoutd");
    assert_non_null(strstr(field(p, "message"), "/srv/layoutd/images"));
    json_object_put(l);
    ho.backing_free = 3 * GIB; /* 2 GiB beyond the promise, under the 5 GiB reserve */
    assert_int_equal(capacity_problems(&in, &l, &worst), 0);
    assert_int_equal(worst, VOLUME_HEALTH_WARNING);
    assert_non_null(problem(l, "host-low"));
    json_object_put(l);
    Pool sp = pool(BACKEND_LOOP_XFS, GIB);
    enable_growth(&sp, 4 * GIB);
    sp.growth.host_reserve_percent = 0;
    sp.growth.host_reserve = GIB; /* a reserve of its own: 2 GiB is enough */
    in.state_pool = &sp;
    in.record_save_error = -ENOSPC;
    in.record_path = "/srv/layoutd/record.json";
    in.reload_error = "layout.yaml: bad";
    assert_int_equal(capacity_problems(&in, &l, &worst), 0);
    assert_null(problem(l, "host-low"));
    assert_non_null(strstr(field(problem(l, "record-unsaved"), "message"), "/srv/layoutd/record.json"));
    p = problem(l, "reload-refused");
    assert_null(json_object_object_get(p, "host"));
    assert_non_null(strstr(field(p, "message"), "layout.yaml: bad"));
    assert_int_equal(json_object_array_length(l), 2);
    assert_int_equal(worst, VOLUME_HEALTH_DEGRADED);
    json_object_put(l);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_usage),
        cmocka_unit_test(test_host),
        cmocka_unit_test(test_growth),
        cmocka_unit_test(test_health),
        cmocka_unit_test(test_slots),
        cmocka_unit_test(test_report),
        cmocka_unit_test(test_problems),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
