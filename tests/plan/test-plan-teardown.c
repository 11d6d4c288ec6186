/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The teardown planner (volumes_plan_teardown), pure: one test per step
 * sequence and per refusal. A record of two state volumes and a content
 * pool, each observed in service (loop-ext4), shaped by hand. */
#include "plan-fixture.h"

typedef struct Case {
    Layout *l;
    Observation *o;
    StateRecord *s;
} Case;

static const char *const names[] = { "state-0", "state-1", "content-0" };

static int setup(void **state) {
    Case *c = calloc(1, sizeof(*c));
    c->l = fixture_layout(BACKEND_LOOP_EXT4, POOL_STATE);
    c->l->pools[POOL_CONTENT] = c->l->pools[POOL_STATE];
    c->l->pools[POOL_CONTENT].role = POOL_CONTENT;
    assert_int_equal(state_record_new(&c->s), 0);
    c->o = calloc(1, sizeof(*c->o));
    c->o->volumes = calloc(3, sizeof(VolumeObservation));
    c->o->n = 3;
    /* Recorded content first: the plan must still put it last. */
    for (int k = 2; k >= 0; k--) {
        VolumeObservation *v = &c->o->volumes[k];
        v->name = strdup(names[k]);
        v->role = k == 2 ? POOL_CONTENT : POOL_STATE;
        v->index = k == 1 ? 1 : 0;
        v->backend = BACKEND_LOOP_EXT4;
        v->declared = true;
        assert_true(asprintf(&v->backing_path, "/srv/l/images/%s.img", names[k]) > 0);
        assert_true(asprintf(&v->mount_path, "/srv/l/volumes/%s", names[k]) > 0);
        v->attached = v->mounted = v->mounted_ours = true;
        assert_true(asprintf(&v->loop.node, "/dev/loop%d", k) > 0);
        VolumeRecord r = { .name = v->name, .role = v->role, .index = v->index, .backend = v->backend,
                           .backing_path = v->backing_path, .size = GIB, .created_file = true, .formatted = true,
                           .fs_type = (char *) "ext4", .fs_uuid = (char *) "u" };
        assert_int_equal(state_record_add_volume(c->s, &r, NULL), 0);
    }
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

static void add_workspace(Case *c, const char *id, const char *volume, bool active) {
    WorkspaceRecord w = { .id = (char *) id, .volume = (char *) volume, .active = active };
    assert_int_equal(state_record_add_workspace(c->s, &w, NULL), 0);
}

/* "state-0:unmount,..." of the plan, steps in order. */
static char *steps(const Plan *p) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    for (size_t i = 0; i < p->n_steps; i++)
        fprintf(f, "%s%s:%s", i ? "," : "", p->steps[i].volume, plan_step_kind_to_string(p->steps[i].kind));
    fclose(f);
    return buf;
}

static Plan *plan(Case *c, TeardownOptions opts) {
    Plan *p = NULL;
    assert_int_equal(volumes_plan_teardown(c->l, c->s, c->o, &opts, &p), 0);
    char *t = NULL;
    assert_int_equal(plan_to_text(p, &t), 0);
    free(t);
    return p;
}

static void expect(Case *c, TeardownOptions opts, const char *want) {
    Plan *p = plan(c, opts);
    char *k = steps(p);
    if (strcmp(k, want) != 0)
        fail_msg("teardown plan:\n expected '%s'\n got      '%s'", want, k);
    free(k);
    plan_free(p);
}

/* The blocking refusals of the plan, "volume:reason,...". */
static void expect_refusals(Case *c, TeardownOptions opts, const char *want) {
    Plan *p = plan(c, opts);
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    for (size_t i = 0, k = 0; i < p->n_steps; i++)
        if (p->steps[i].kind == PLAN_STEP_REFUSE && p->steps[i].blocks)
            fprintf(f, "%s%s:%s", k++ ? "," : "", p->steps[i].volume, p->steps[i].reason);
    fclose(f);
    if (strcmp(buf, want) != 0)
        fail_msg("refusals: expected '%s', got '%s'", want, buf);
    free(buf);
    plan_free(p);
}

static void test_keep_out_of_service_only(void **state) {
    Case *c = *state;
    expect(c, (TeardownOptions) {},
           "state-0:unmount,state-0:detach,state-1:unmount,state-1:detach,content-0:unmount,content-0:detach");
    expect_refusals(c, (TeardownOptions) {}, "");
}

static void test_destroy_order(void **state) {
    Case *c = *state;
    /* Every volume out of service before anything is deleted; the content
     * pool deleted last. */
    expect(c, (TeardownOptions) { .destroy_data = true },
           "state-0:unmount,state-0:detach,state-1:unmount,state-1:detach,content-0:unmount,content-0:detach,"
           "state-0:delete,state-0:delete,state-0:forget,state-1:delete,state-1:delete,state-1:forget,"
           "content-0:delete,content-0:delete,content-0:forget");
}

static void test_refuse_active_workspaces(void **state) {
    Case *c = *state;
    add_workspace(c, "ws-1", "state-0", true);
    expect_refusals(c, (TeardownOptions) {}, "state-0:active-workspaces");
    /* Destroying: the pool is refused too, since ws-1 stays recorded. */
    expect_refusals(c, (TeardownOptions) { .destroy_data = true },
                    "state-0:active-workspaces,content-0:pool-referenced");
    /* --remove-workspaces: nothing refused, ws-1 forgotten with state-0. */
    expect_refusals(c, (TeardownOptions) { .destroy_data = true, .remove_workspaces = true }, "");
    Plan *p = plan(c, (TeardownOptions) { .destroy_data = true, .remove_workspaces = true });
    bool forgotten = false;
    for (size_t i = 0; i < p->n_steps; i++)
        forgotten = forgotten || (p->steps[i].kind == PLAN_STEP_FORGET && strstr(p->steps[i].description, "ws-1"));
    assert_true(forgotten);
    plan_free(p);
}

static void test_kept_data(void **state) {
    Case *c = *state;
    add_workspace(c, "old", "state-1", false);
    /* Kept data stays recorded with its kept volume: nothing refused. */
    expect_refusals(c, (TeardownOptions) {}, "");
    /* Destroyed with its volume, so the pool may go. */
    expect_refusals(c, (TeardownOptions) { .destroy_data = true }, "");
}

static void test_refuse_pool_while_referenced_elsewhere(void **state) {
    Case *c = *state;
    /* A workspace recorded on a volume no longer in the record: its stubs
     * may still point into the pool, which is kept. */
    add_workspace(c, "orphan", "state-7", false);
    expect_refusals(c, (TeardownOptions) { .destroy_data = true, .remove_workspaces = true },
                    "content-0:pool-referenced");
    expect_refusals(c, (TeardownOptions) {}, "");
}

static void test_refuse_mounted_elsewhere(void **state) {
    Case *c = *state;
    VolumeObservation *v = &c->o->volumes[1];
    v->mounted = v->mounted_ours = false;
    v->loop_mounted_elsewhere = true;
    v->loop_mount.target = strdup("/mnt/hand");
    expect_refusals(c, (TeardownOptions) {}, "state-1:mounted-elsewhere");
}

static void test_unobserved_and_down(void **state) {
    Case *c = *state;
    /* After a reboot: nothing attached or mounted. Only deletes. */
    for (size_t i = 0; i < c->o->n; i++)
        c->o->volumes[i].attached = c->o->volumes[i].mounted = c->o->volumes[i].mounted_ours = false;
    expect(c, (TeardownOptions) {}, "");
    expect(c, (TeardownOptions) { .destroy_data = true },
           "state-0:delete,state-0:delete,state-0:forget,state-1:delete,state-1:delete,state-1:forget,"
           "content-0:delete,content-0:delete,content-0:forget");
}

static void test_not_created_is_kept(void **state) {
    Case *c = *state;
    /* A backing file layoutd did not create (the record says so): never
     * deleted, said in the plan, and the teardown is not refused for it. */
    VolumeRecord *r = state_record_find_volume(c->s, "state-1");
    assert_non_null(r);
    r->created_file = false;
    expect_refusals(c, (TeardownOptions) { .destroy_data = true }, "");
    Plan *p = plan(c, (TeardownOptions) { .destroy_data = true });
    assert_true(plan_has_reason(p, "state-1", "not-created"));
    for (size_t i = 0; i < p->n_steps; i++)
        if (p->steps[i].kind == PLAN_STEP_DELETE && p->steps[i].path && strstr(p->steps[i].path, "state-1.img"))
            fail_msg("the plan deletes a backing file layoutd did not create: %s", p->steps[i].description);
    assert_false(plan_has_reason(p, "state-0", "not-created"));
    plan_free(p);
}

static void test_refuse_unknown_backend(void **state) {
    Case *c = *state;
    /* A record written by a newer layoutd, with a backend this one does
     * not know: that volume is left as is, and so is everything else. */
    VolumeRecord *r = state_record_find_volume(c->s, "state-1");
    assert_non_null(r);
    r->backend = _BACKEND_INVALID;
    expect_refusals(c, (TeardownOptions) {}, "state-1:unknown-backend");
    expect_refusals(c, (TeardownOptions) { .destroy_data = true }, "state-1:unknown-backend");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_not_created_is_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuse_unknown_backend, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keep_out_of_service_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_destroy_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuse_active_workspaces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kept_data, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuse_pool_while_referenced_elsewhere, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuse_mounted_elsewhere, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unobserved_and_down, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
