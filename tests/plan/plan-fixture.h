/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Hand-made layouts, records and observations for the pure planners
 * (tests/plan/): no device, no root. One volume, "<role>-0", whose
 * observation a test shapes field by field before asking for the plan.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include "util.h"
#include "volumes.h"

static inline Layout *fixture_layout(Backend backend, PoolRole role) {
    Layout *l = calloc(1, sizeof(*l));
    assert_non_null(l);
    l->root = strdup("/srv/l");
    l->version = 1;
    Pool *p = &l->pools[role];
    *p = (Pool) { .role = role, .declared = true, .backend = backend, .volume_size = 1 * GIB,
                  .min_volumes = 1, .max_volumes = 4, .direct_io = true, .shards = 1,
                  .writeback = { .max_ratio = -1, .strict_limit = -1 } };
    if (backend == BACKEND_VDO_XFS) {
        p->has_vdo = true;
        p->vdo = (VdoOptions) { .logical_size = 4 * GIB, .compression = true, .deduplication = true,
                                .block_map_cache = 128 * MIB };
    }
    if (backend == BACKEND_DIR) {
        p->volume_size = 0;
        p->direct_io = false;
    }
    return l;
}

static inline Observation *fixture_obs(Backend backend, PoolRole role) {
    Observation *o = calloc(1, sizeof(*o));
    assert_non_null(o);
    o->volumes = calloc(1, sizeof(VolumeObservation));
    o->n = 1;
    VolumeObservation *v = &o->volumes[0];
    const char *name = role == POOL_STATE ? "state-0" : "content-0";
    v->name = strdup(name);
    v->role = role;
    v->backend = backend;
    v->declared = true;
    if (backend != BACKEND_DIR)
        assert_true(asprintf(&v->backing_path, "/srv/l/images/%s.img", name) > 0);
    assert_true(asprintf(&v->mount_path, "/srv/l/volumes/%s", name) > 0);
    return o;
}

/* The identity every fixture record carries (fixture_identify() puts it on
 * an observed volume). */
#define FIXTURE_IDENTITY "0b7a6d1c-5e4f-4a3b-8c2d-1e0f9a8b7c6d"

static inline void fixture_identify(VolumeObservation *v) {
    free(v->identity);
    v->identity = strdup(FIXTURE_IDENTITY);
}

static inline StateRecord *fixture_record(const VolumeObservation *v, bool created, bool formatted, const char *type,
                                          const char *uuid) {
    StateRecord *s = NULL;
    assert_int_equal(state_record_new(&s), 0);
    VolumeRecord r = { .name = v->name, .role = v->role, .backend = v->backend, .backing_path = v->backing_path,
                       .size = 1 * GIB, .created_file = created, .formatted = formatted,
                       .fs_type = (char *) type, .fs_uuid = (char *) uuid,
                       .identity = (char *) FIXTURE_IDENTITY };
    assert_int_equal(state_record_add_volume(s, &r, NULL), 0);
    return s;
}

static inline void fixture_probe(ProbeResult *p, bool *probed, bool blank, const char *type, const char *uuid) {
    probe_result_done(p);
    *probed = true;
    p->blank = blank;
    p->type = type ? strdup(type) : NULL;
    p->uuid = uuid ? strdup(uuid) : NULL;
}

/* "create-file,attach,..." of the plan. */
static inline char *fixture_kinds(const Plan *p) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    for (size_t i = 0; i < p->n_steps; i++)
        fprintf(f, "%s%s", i ? "," : "", plan_step_kind_to_string(p->steps[i].kind));
    fclose(f);
    return buf;
}

/* Plans and checks the kinds, and when reason is set that a REFUSE/DRIFT
 * carries it with the expected blocking. The renderings must work too. */
static inline void fixture_expect(const Layout *l, const StateRecord *s, const Observation *o, const char *want,
                                  const char *reason, bool blocks) {
    Plan *p = NULL;
    assert_int_equal(volumes_plan(l, s, o, &p), 0);
    char *k = fixture_kinds(p);
    if (strcmp(k, want) != 0)
        fail_msg("plan: expected '%s', got '%s'", want, k);
    if (reason) {
        bool found = false;
        for (size_t i = 0; i < p->n_steps; i++)
            if (streq_ptr(p->steps[i].reason, reason)) {
                found = true;
                assert_int_equal(p->steps[i].blocks, blocks);
            }
        if (!found)
            fail_msg("plan has no step with reason '%s'", reason);
    }
    char *t = NULL;
    assert_int_equal(plan_to_text(p, &t), 0);
    free(t);
    assert_int_equal(plan_to_json_string(p, &t), 0);
    free(t);
    free(k);
    plan_free(p);
}
