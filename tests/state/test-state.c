/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for the persisted record: round trip, strict loading, atomic save. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <cmocka.h>

#include "state.h"
#include "util.h"

static char *make_tmpdir(void) {
    char *t = strdup("/tmp/layoutd-test-state.XXXXXX");
    assert_non_null(t);
    assert_non_null(mkdtemp(t));
    return t;
}

static void rm_dir(const char *dir) {
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void fill(StateRecord *s) {
    VolumeRecord v = {
        .name = (char *) "state-0",
        .role = POOL_STATE,
        .index = 0,
        .backend = BACKEND_LOOP_EXT4,
        .backing_path = (char *) "/srv/l/images/state-0.img",
        .size = 256 * MIB,
        .created_file = true,
        .formatted = true,
        .fs_type = (char *) "ext4",
        .fs_uuid = (char *) "0b9c4b2e-1111-4222-8333-444455556666",
        .fs_label = (char *) "ld-state-0",
        .created_at = 1700000000000000ULL,
    };
    VolumeRecord *stored = NULL;
    assert_int_equal(state_record_add_volume(s, &v, &stored), 0);
    assert_non_null(stored);
    assert_ptr_not_equal(stored->name, v.name); /* deep copy */
    VolumeRecord c = {
        .name = (char *) "content-0",
        .role = POOL_CONTENT,
        .backend = BACKEND_DIR,
    };
    assert_int_equal(state_record_add_volume(s, &c, NULL), 0);
    assert_int_equal(state_record_add_volume(s, &c, NULL), -EEXIST);

    char *labels[] = { (char *) "team=a", (char *) "x=y", NULL };
    WorkspaceRecord w = {
        .id = (char *) "ws-1",
        .tenant = (char *) "acme",
        .quota = 1 * GIB,
        .labels = labels,
        .volume = (char *) "state-0",
        .state_dir = (char *) "/srv/l/volumes/state-0/workspaces/ws-1",
        .mountpoint = (char *) "/srv/l/workspaces/ws-1",
        .active = true,
        .created_at = 5,
        .daemon = { .pid = 4242, .start_time = 99, .boot_id = "0123456789abcdef0123456789abcdef",
                    .boot_id_hash = UINT64_MAX, .mount_dev = makedev(0, 57), .restarts = 3 },
    };
    assert_int_equal(state_record_add_workspace(s, &w, NULL), 0);
    w.id = (char *) "ws-2";
    w.active = false;
    w.tenant = NULL;
    w.labels = NULL;
    w.quota_changing = true; /* a removal of its quota under way */
    w.quota_pending = 0;
    assert_int_equal(state_record_add_workspace(s, &w, NULL), 0);
}

static void test_round_trip(void **unused) {
    _cleanup_(state_record_freep) StateRecord *s = NULL, *t = NULL;
    _cleanup_free_ char *a = NULL, *b = NULL;
    assert_int_equal(state_record_new(&s), 0);
    fill(s);
    assert_int_equal(state_record_to_json_string(s, &a), 0);
    assert_int_equal(state_record_from_json_string(a, &t), 0);
    assert_int_equal(state_record_to_json_string(t, &b), 0);
    assert_string_equal(a, b);

    VolumeRecord *v = state_record_find_volume(t, "state-0");
    assert_non_null(v);
    assert_int_equal(v->size, 256 * MIB);
    assert_true(v->created_file && v->formatted);
    assert_string_equal(v->fs_uuid, "0b9c4b2e-1111-4222-8333-444455556666");
    assert_int_equal(v->backend, BACKEND_LOOP_EXT4);
    VolumeRecord *c = state_record_find_volume(t, "content-0");
    assert_non_null(c);
    assert_null(c->backing_path);
    assert_null(c->fs_uuid);
    assert_int_equal(c->role, POOL_CONTENT);

    WorkspaceRecord *w = state_record_find_workspace(t, "ws-1");
    assert_non_null(w);
    assert_int_equal(w->daemon.pid, 4242);
    assert_true(w->daemon.boot_id_hash == UINT64_MAX);
    assert_string_equal(w->daemon.boot_id, "0123456789abcdef0123456789abcdef");
    assert_int_equal(major(w->daemon.mount_dev), 0);
    assert_int_equal(minor(w->daemon.mount_dev), 57);
    assert_int_equal(strv_length((const char *const *) w->labels), 2);
    assert_string_equal(w->labels[1], "x=y");
    assert_false(w->quota_changing);
    /* Written only while a change runs: once, for ws-2. */
    const char *pending = strstr(a, "\"quota_pending\"");
    assert_non_null(pending);
    assert_null(strstr(pending + 1, "\"quota_pending\""));
    WorkspaceRecord *w2 = state_record_find_workspace(t, "ws-2");
    assert_non_null(w2);
    assert_true(w2->quota_changing); /* a pending 0 is a pending change */
    assert_int_equal(w2->quota_pending, 0);
    assert_true(workspace_record_quota_bound(w2) == 1 * GIB); /* the larger, until it is done */
    w2->quota = 0;
    w2->quota_pending = 2 * GIB;
    assert_true(workspace_record_quota_bound(w2) == 2 * GIB);
    w2->quota_changing = false;
    assert_true(workspace_record_quota_bound(w2) == 0);
    assert_null(state_record_find_workspace(t, "nope"));
    assert_int_equal(state_record_count_workspaces(t, "state-0"), 1); /* ws-2 is inactive */
}

static void test_remove(void **unused) {
    _cleanup_(state_record_freep) StateRecord *s = NULL;
    assert_int_equal(state_record_new(&s), 0);
    fill(s);
    assert_int_equal(state_record_remove_volume(s, "state-0"), 0);
    assert_int_equal(state_record_remove_volume(s, "state-0"), -ENOENT);
    assert_null(state_record_find_volume(s, "state-0"));
    assert_non_null(state_record_find_volume(s, "content-0"));
    assert_int_equal(s->n_volumes, 1);
    assert_int_equal(state_record_remove_workspace(s, "ws-1"), 0);
    assert_int_equal(state_record_remove_workspace(s, "ws-1"), -ENOENT);
    assert_int_equal(s->n_workspaces, 1);
}

static void expect_bad(const char *json, int err) {
    StateRecord *s = NULL;
    assert_int_equal(state_record_from_json_string(json, &s), err);
    assert_null(s);
}

static void test_strict(void **unused) {
    expect_bad("", -EBADMSG);
    expect_bad("{", -EBADMSG);
    expect_bad("[]", -EBADMSG);
    expect_bad("{}", -EBADMSG);                       /* no version */
    expect_bad("{\"version\": 0}", -EBADMSG);
    expect_bad("{\"version\": \"1\"}", -EBADMSG);
    expect_bad("{\"version\": 2}", -EPROTONOSUPPORT); /* newer: never overwrite */
    expect_bad("{\"version\": 1} {\"version\": 1}", -EBADMSG);
    expect_bad("{\"version\": 1, \"volumes\": {}}", -EBADMSG);
    expect_bad("{\"version\": 1, \"volumes\": [{\"name\": \"x\"}]}", -EBADMSG);
    expect_bad("{\"version\": 1, \"volumes\": [{\"name\": \"state-0\", \"role\": \"bogus\", \"index\": 0, \"backend\": \"loop-ext4\"}]}", -EBADMSG);
    expect_bad("{\"version\": 1, \"volumes\": [{\"name\": \"state-0\", \"role\": \"state\", \"index\": -1, \"backend\": \"loop-ext4\"}]}", -EBADMSG);
    expect_bad("{\"version\": 1, \"volumes\": [{\"name\": \"state-0\", \"role\": \"state\", \"index\": 0, \"backend\": \"loop-ext4\", \"formatted\": true}]}", -EBADMSG);
    expect_bad("{\"version\": 1, \"volumes\": [{\"name\": \"state-0\", \"role\": \"state\", \"index\": 0, \"backend\": \"loop-ext4\", \"size\": \"big\"}]}", -EBADMSG);
    expect_bad("{\"version\": 1, \"volumes\": ["
               "{\"name\": \"state-0\", \"role\": \"state\", \"index\": 0, \"backend\": \"loop-ext4\"},"
               "{\"name\": \"state-0\", \"role\": \"state\", \"index\": 0, \"backend\": \"loop-ext4\"}]}",
               -EBADMSG);
    expect_bad("{\"version\": 1, \"workspaces\": [{\"id\": \"a\", \"daemon\": {\"mount_dev\": \"zz\"}}]}", -EBADMSG);
    expect_bad("{\"version\": 1, \"workspaces\": [{\"id\": \"a\", \"daemon\": {\"pid\": -5}}]}", -EBADMSG);
    expect_bad("{\"version\": 1, \"workspaces\": [{\"id\": \"a\", \"daemon\": {\"boot_id\": \"0123\"}}]}", -EBADMSG);
    expect_bad("{\"version\": 1, \"workspaces\": [{\"id\": \"a\", \"daemon\": "
               "{\"boot_id\": \"0123456789ABCDEF0123456789abcdef\"}}]}", -EBADMSG);

    /* A record of an older layoutd: the boot id's hash only. */
    _cleanup_(state_record_freep) StateRecord *old = NULL;
    assert_int_equal(state_record_from_json_string("{\"version\": 1, \"workspaces\": [{\"id\": \"a\", \"daemon\": "
                                                   "{\"pid\": 7, \"boot_id_hash\": 12345}}]}", &old), 0);
    WorkspaceRecord *ow = state_record_find_workspace(old, "a");
    assert_non_null(ow);
    assert_string_equal(ow->daemon.boot_id, "");
    assert_true(ow->daemon.boot_id_hash == 12345);

    /* Minimal valid, with an unknown informational key. */
    _cleanup_(state_record_freep) StateRecord *s = NULL;
    assert_int_equal(state_record_from_json_string("{\"version\": 1, \"note\": \"hi\"}\n", &s), 0);
    assert_int_equal(s->n_volumes, 0);
    assert_int_equal(s->version, STATE_RECORD_VERSION);
}

static void test_load_save(void **unused) {
    _cleanup_free_ char *dir = make_tmpdir(), *path = NULL, *text = NULL;
    assert_true(asprintf(&path, "%s/layoutd-state.json", dir) > 0);

    /* Missing file: empty record. */
    _cleanup_(state_record_freep) StateRecord *s = NULL;
    assert_int_equal(state_record_load(path, &s), 0);
    assert_int_equal(s->n_volumes, 0);
    assert_int_equal(s->generation, 0);

    fill(s);
    assert_int_equal(state_record_save(s, path), 0);
    assert_int_equal(s->generation, 1);
    assert_int_equal(state_record_save(s, path), 0);
    assert_int_equal(s->generation, 2);

    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);

    _cleanup_(state_record_freep) StateRecord *t = NULL;
    assert_int_equal(state_record_load(path, &t), 0);
    assert_int_equal(t->generation, 2);
    assert_int_equal(t->n_volumes, 2);
    assert_int_equal(t->n_workspaces, 2);

    /* Save into a missing directory fails and leaves nothing. */
    _cleanup_free_ char *bad = NULL;
    assert_true(asprintf(&bad, "%s/nope/x.json", dir) > 0);
    assert_true(state_record_save(t, bad) < 0);
    assert_int_equal(t->generation, 2);

    /* A corrupt file is an error, and stays as it was. */
    assert_int_equal(write_file_atomic(path, "{\"version\": 1, \"volu", 20, 0600), 0);
    StateRecord *u = NULL;
    assert_int_equal(state_record_load(path, &u), -EBADMSG);
    assert_null(u);
    assert_int_equal(read_full_file(path, &text, NULL), 0);
    assert_string_equal(text, "{\"version\": 1, \"volu");

    /* Embedded NUL. */
    assert_int_equal(write_file_atomic(path, "{\"version\": 1}\0xx", 17, 0600), 0);
    assert_int_equal(state_record_load(path, &u), -EBADMSG);

    /* Newer version. */
    const char *newer = "{\"version\": 99, \"generation\": 1}";
    assert_int_equal(write_file_atomic(path, newer, strlen(newer), 0600), 0);
    assert_int_equal(state_record_load(path, &u), -EPROTONOSUPPORT);

    /* No temporary files left behind. */
    _cleanup_free_ char *cmd = NULL;
    assert_true(asprintf(&cmd, "test $(ls -A '%s' | wc -l) -eq 1", dir) > 0);
    assert_int_equal(system(cmd), 0);
    rm_dir(dir);
}

static void test_copy(void **unused) {
    _cleanup_(state_record_freep) StateRecord *s = NULL;
    assert_int_equal(state_record_new(&s), 0);
    fill(s);
    VolumeRecord *c = NULL;
    assert_int_equal(volume_record_copy(s->volumes[0], &c), 0);
    assert_string_equal(c->fs_label, "ld-state-0");
    volume_record_free(c);
    WorkspaceRecord *w = NULL;
    assert_int_equal(workspace_record_copy(s->workspaces[0], &w), 0);
    assert_string_equal(w->labels[0], "team=a");
    workspace_record_free(w);
    assert_null(state_record_free(NULL));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_remove),
        cmocka_unit_test(test_strict),
        cmocka_unit_test(test_load_save),
        cmocka_unit_test(test_copy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
