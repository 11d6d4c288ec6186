/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The workspace lifecycle on a real directory tree (the `dir` backend, so
 * no root and no devices are needed): create with elastic carving and the
 * pool-full refusal, refusals, stickiness, safe destroy, reconcile, the
 * crash between "directory created" and "state written" (a child process
 * killed at that point through place_test_hook), flush scope, list/get.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "place-cache.h"
#include "place.h"
#include "util.h"

typedef struct Fixture {
    char root[64];
    Layout *layout;
    StateRecord *record;
    char *record_path;
    PlaceContext ctx;
    unsigned carves;
    unsigned last_carve_index;
} Fixture;

static int carve_dir(void *userdata, PoolRole role, unsigned index, char **ret) {
    Fixture *f = userdata;
    _cleanup_free_ char *name = NULL, *mount = NULL;
    int r = layout_volume_name(role, index, &name);
    if (r < 0)
        return r;
    r = layout_mount_path(f->layout, name, &mount);
    if (r < 0)
        return r;
    r = mkdir_p(mount, 0755);
    if (r < 0)
        return r;
    VolumeRecord v = { .name = name, .role = role, .index = index, .backend = BACKEND_DIR };
    r = state_record_add_volume(f->record, &v, NULL);
    if (r < 0)
        return r;
    f->carves++;
    f->last_carve_index = index;
    *ret = TAKE_PTR(name);
    return 0;
}

static void run(const char *cmd) {
    assert_int_equal(system(cmd), 0);
}

static int setup(void **state) {
    Fixture *f = calloc(1, sizeof(Fixture));
    assert_non_null(f);
    strcpy(f->root, "/tmp/layoutd-test-place-XXXXXX");
    assert_non_null(mkdtemp(f->root));

    struct passwd *pw = getpwuid(geteuid());
    assert_non_null(pw);
    _cleanup_free_ char *yaml = NULL;
    assert_true(asprintf(&yaml,
                         "version: 1\n"
                         "root: /var/tmp/unused\n"
                         "pools:\n"
                         "  state:\n"
                         "    backend: dir\n"
                         "    min_volumes: 2\n"
                         "    max_volumes: 3\n"
                         "    workspaces_per_volume: 2\n"
                         "    workspace_reserve: 1MiB\n"
                         "    workspace_reserve_inodes: 16\n"
                         "    slow_flush_factor: 4\n"
                         "  content:\n"
                         "    backend: dir\n"
                         "    shards: 1\n"
                         "workspace:\n"
                         "  command: [/bin/true]\n"
                         "  user: %s\n"
                         "  dir_mode: \"0750\"\n", pw->pw_name) > 0);
    LayoutErrors errors = {};
    int r = layout_parse_string(yaml, strlen(yaml), "test.yaml", &f->layout, &errors);
    for (size_t i = 0; i < errors.n; i++)
        print_error("%s:%u:%u: %s\n", errors.items[i].file, errors.items[i].line,
                    errors.items[i].column, errors.items[i].message);
    layout_errors_clear(&errors);
    assert_int_equal(r, 0);
    assert_int_equal(layout_set_root(f->layout, f->root), 0);

    assert_int_equal(state_record_new(&f->record), 0);
    assert_int_equal(layout_record_path(f->layout, &f->record_path), 0);
    f->ctx = (PlaceContext) {
        .layout = f->layout,
        .record = f->record,
        .record_path = f->record_path,
        .carve = carve_dir,
        .carve_userdata = f,
    };
    /* min_volumes: 2, as apply would have carved them. */
    for (unsigned i = 0; i < 2; i++) {
        _cleanup_free_ char *name = NULL;
        assert_int_equal(carve_dir(f, POOL_STATE, i, &name), 0);
    }
    f->carves = 0;
    assert_int_equal(state_record_save(f->record, f->record_path), 0);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    Fixture *f = *state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->root);
    (void) system(cmd);
    state_record_free(f->record);
    layout_free(f->layout);
    free(f->record_path);
    free(f);
    return 0;
}

static char *state_path(Fixture *f, const char *volume, const char *id) {
    char *p;
    assert_true(asprintf(&p, "%s/volumes/%s/workspaces/%s", f->root, volume, id) > 0);
    return p;
}

static bool exists(const char *p) {
    struct stat st;
    return lstat(p, &st) == 0;
}

static int create(Fixture *f, const char *id, const char *tenant, bool reclaim, PlaceError *e) {
    PlaceCreateRequest req = { .id = id, .tenant = tenant, .reclaim = reclaim };
    return place_workspace_create(&f->ctx, &req, NULL, e);
}

static void create_ok(Fixture *f, const char *id, const char *tenant, bool reclaim) {
    PlaceError e = {};
    int r = create(f, id, tenant, reclaim, &e);
    if (r < 0)
        print_error("create %s: %s\n", id, e.message ?: strerror(-r));
    assert_int_equal(r, 0);
    place_error_done(&e);
}

/* The record on disk, freshly loaded. */
static StateRecord *load(Fixture *f) {
    StateRecord *s = NULL;
    assert_int_equal(state_record_load(f->record_path, &s), 0);
    return s;
}

static size_t active_on(const StateRecord *s, const char *volume) {
    return state_record_count_workspaces(s, volume);
}

static void test_create_elastic_and_full(void **state) {
    Fixture *f = *state;
    const char *expect[] = { "state-0", "state-1", "state-0", "state-1", "state-2", "state-2" };
    char id[16];

    for (unsigned i = 0; i < 6; i++) {
        snprintf(id, sizeof(id), "w%u", i);
        create_ok(f, id, NULL, false);
        WorkspaceRecord *w = place_workspace_get(f->record, id);
        assert_non_null(w);
        assert_true(w->active);
        assert_string_equal(w->volume, expect[i]);
        _cleanup_free_ char *p = state_path(f, expect[i], id);
        assert_string_equal(w->state_dir, p);
        struct stat st;
        assert_int_equal(stat(p, &st), 0);
        assert_true(S_ISDIR(st.st_mode));
        assert_int_equal(st.st_mode & 07777, 0750);
        assert_int_equal(st.st_uid, geteuid());
    }
    assert_int_equal(f->carves, 1);
    assert_int_equal(f->last_carve_index, 2);

    _cleanup_(state_record_freep) StateRecord *disk = load(f);
    assert_int_equal(disk->n_workspaces, 6);
    assert_int_equal(disk->n_volumes, 3);
    for (unsigned v = 0; v < 3; v++) {
        char name[16];
        snprintf(name, sizeof(name), "state-%u", v);
        assert_int_equal(active_on(disk, name), 2);
    }

    /* The pool is full: refused, clear message, nothing changed. */
    _cleanup_free_ char *before = NULL, *after = NULL;
    assert_int_equal(read_full_file(f->record_path, &before, NULL), 0);
    PlaceError e = {};
    assert_int_equal(create(f, "w6", NULL, false, &e), -ENOSPC);
    assert_int_equal(e.reason, PLACE_REASON_POOL_FULL);
    assert_string_equal(e.message, "pool 'state' is full: 3 volumes × 2 workspaces "
                                   "(workspaces_per_volume) are in use; raise "
                                   "pools.state.max_volumes or workspaces_per_volume");
    place_error_done(&e);
    assert_int_equal(read_full_file(f->record_path, &after, NULL), 0);
    assert_string_equal(before, after);
    assert_null(place_workspace_get(f->record, "w6"));
    assert_int_equal(f->carves, 1);
    for (unsigned v = 0; v < 3; v++) {
        char name[16];
        snprintf(name, sizeof(name), "state-%u", v);
        _cleanup_free_ char *p = state_path(f, name, "w6");
        assert_false(exists(p));
    }

    /* The "why" of the refusal names every volume. */
    PlaceCreateRequest req = { .id = "w6" };
    PlaceDecision d = {};
    _cleanup_free_ PlaceCandidate *cands = NULL;
    size_t n = 0;
    PlacePoolConfig cfg;
    assert_int_equal(place_workspace_explain(&f->ctx, &req, &d, &cands, &n, &cfg), 0);
    assert_int_equal(n, 3);
    _cleanup_free_ char *why = NULL;
    PlaceRequest preq = { .id = "w6" };
    assert_int_equal(place_decision_format_why(&d, cands, n, &preq, &cfg, &why), 0);
    assert_non_null(strstr(why, "state-0"));
    assert_non_null(strstr(why, "state-2"));
    assert_non_null(strstr(why, "at the bound, 2/2"));
    place_decision_done(&d);
}

static void test_refusals(void **state) {
    Fixture *f = *state;
    PlaceError e = {};

    PlaceCreateRequest q = { .id = "quota", .quota = 10 * MIB };
    assert_int_equal(place_workspace_create(&f->ctx, &q, NULL, &e), -EOPNOTSUPP);
    assert_non_null(strstr(e.message, "cannot be enforced here"));
    assert_int_equal(e.reason, PLACE_REASON_NO_QUOTA);
    place_error_done(&e);

    const char *bad[] = { "../etc", "a/b", "Upper", "-x", "", "a.b" };
    for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
        assert_int_equal(create(f, bad[i], NULL, false, &e), -EINVAL);
        assert_int_equal(e.reason, PLACE_REASON_INVALID);
        assert_non_null(e.message);
        place_error_done(&e);
    }
    char longer[LAYOUT_WORKSPACE_ID_MAX + 2];
    memset(longer, 'a', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = 0;
    assert_int_equal(create(f, longer, NULL, false, &e), -EINVAL);
    assert_non_null(strstr(e.message, "at most 64"));
    place_error_done(&e);
    assert_int_equal(create(f, "ok", "Bad_Tenant", false, &e), -EINVAL);
    place_error_done(&e);

    create_ok(f, "dup", NULL, false);
    assert_int_equal(create(f, "dup", NULL, false, &e), -EEXIST);
    place_error_done(&e);

    /* A directory nobody recorded: never silently reused. (spread puts the
     * next one on state-1, where dup is not.) */
    _cleanup_free_ char *orphan = state_path(f, "state-1", "clash");
    assert_int_equal(mkdir_p(orphan, 0755), 0);
    assert_int_equal(create(f, "clash", NULL, false, &e), -EEXIST);
    assert_non_null(strstr(e.message, "reconcile"));
    place_error_done(&e);

    /* A non-empty mount point of that name belongs to someone else; an
     * empty one is fine. */
    _cleanup_free_ char *mp = NULL, *mpfile = NULL;
    assert_true(asprintf(&mp, "%s/workspaces/busy", f->root) > 0);
    assert_true(asprintf(&mpfile, "%s/file", mp) > 0);
    assert_int_equal(mkdir_p(mp, 0755), 0);
    assert_int_equal(write_file_atomic(mpfile, "x", 1, 0644), 0);
    assert_int_equal(create(f, "busy", NULL, false, &e), -EEXIST);
    assert_non_null(strstr(e.message, "mount point"));
    place_error_done(&e);
    assert_null(place_workspace_get(f->record, "busy"));
    _cleanup_free_ char *mp2 = NULL;
    assert_true(asprintf(&mp2, "%s/workspaces/emptymp", f->root) > 0);
    assert_int_equal(mkdir_p(mp2, 0755), 0);
    create_ok(f, "emptymp", NULL, false);
}

static void write_marker(const char *dir, const char *name, const char *content) {
    _cleanup_free_ char *p = NULL;
    assert_true(asprintf(&p, "%s/%s", dir, name) > 0);
    assert_int_equal(write_file_atomic(p, content, strlen(content), 0644), 0);
}

static void test_sticky(void **state) {
    Fixture *f = *state;
    PlaceError e = {};

    create_ok(f, "a", "t1", false);   /* state-0 */
    create_ok(f, "b", "t1", false);   /* state-1 */
    WorkspaceRecord *a = place_workspace_get(f->record, "a");
    assert_string_equal(a->volume, "state-0");
    write_marker(a->state_dir, "data", "precious");

    assert_int_equal(place_workspace_remove(&f->ctx, "a", 0, &e), 0);
    a = place_workspace_get(f->record, "a");
    assert_false(a->active);
    assert_true(exists(a->state_dir));
    _cleanup_(state_record_freep) StateRecord *disk = load(f);
    assert_false(state_record_find_workspace(disk, "a")->active);
    assert_int_equal(active_on(disk, "state-0"), 0); /* kept data is not counted */

    /* Without reclaim the id is not reused. */
    assert_int_equal(create(f, "a", "t1", false, &e), -EEXIST);
    assert_non_null(strstr(e.message, "reclaim"));
    place_error_done(&e);
    /* Another tenant cannot take it. */
    assert_int_equal(create(f, "a", "t2", true, &e), -EACCES);
    place_error_done(&e);

    /* Fill state-0 to its bound: the way back is blocked, and the data is
     * not moved elsewhere. */
    create_ok(f, "c", "t1", false);
    create_ok(f, "d", "t1", false);
    assert_string_equal(place_workspace_get(f->record, "c")->volume, "state-0");
    assert_string_equal(place_workspace_get(f->record, "d")->volume, "state-0");
    assert_int_equal(create(f, "a", "t1", true, &e), -EBUSY);
    assert_int_equal(e.reason, PLACE_REASON_AT_BOUND);
    assert_non_null(strstr(e.message, "not moved"));
    place_error_done(&e);
    assert_false(place_workspace_get(f->record, "a")->active);

    assert_int_equal(place_workspace_remove(&f->ctx, "d", PLACE_REMOVE_DESTROY, &e), 0);
    create_ok(f, "a", "t1", true);
    a = place_workspace_get(f->record, "a");
    assert_true(a->active);
    assert_string_equal(a->volume, "state-0");
    _cleanup_free_ char *p = NULL, *content = NULL;
    assert_true(asprintf(&p, "%s/data", a->state_dir) > 0);
    assert_int_equal(read_full_file(p, &content, NULL), 0);
    assert_string_equal(content, "precious");
}

static void test_destroy_safely(void **state) {
    Fixture *f = *state;
    PlaceError e = {};

    /* Something outside the workspace that a symlink inside points at. */
    _cleanup_free_ char *outside = NULL, *outside_file = NULL;
    assert_true(asprintf(&outside, "%s/outside", f->root) > 0);
    assert_int_equal(mkdir_p(outside, 0755), 0);
    write_marker(outside, "keep", "keep me");
    assert_true(asprintf(&outside_file, "%s/keep", outside) > 0);

    create_ok(f, "doomed", NULL, false);
    WorkspaceRecord *w = place_workspace_get(f->record, "doomed");
    _cleanup_free_ char *dir = strdup(w->state_dir), *cmd = NULL;
    assert_true(asprintf(&cmd,
                         "set -e; cd '%s'; mkdir -p a/b/c; echo x > a/b/c/f; echo y > top; "
                         "ln -s '%s' linkdir; ln -s '%s' a/linkfile; mkfifo a/fifo; "
                         "chmod 0500 a/b", dir, outside, outside_file) > 0);
    run(cmd);

    assert_int_equal(place_workspace_remove(&f->ctx, "doomed", PLACE_REMOVE_DESTROY, &e), 0);
    assert_false(exists(dir));
    assert_null(place_workspace_get(f->record, "doomed"));
    _cleanup_(state_record_freep) StateRecord *disk = load(f);
    assert_null(state_record_find_workspace(disk, "doomed"));
    _cleanup_free_ char *content = NULL;
    assert_int_equal(read_full_file(outside_file, &content, NULL), 0);
    assert_string_equal(content, "keep me");

    assert_int_equal(place_workspace_remove(&f->ctx, "doomed", 0, &e), -ENOENT);
    place_error_done(&e);
}

static bool report_has(const PlaceReconcileReport *r, PlaceReconcileKind k, const char *name) {
    for (size_t i = 0; i < r->n_items; i++)
        if (r->items[i].kind == k && streq_ptr(r->items[i].name, name))
            return true;
    return false;
}

static void test_reconcile(void **state) {
    Fixture *f = *state;
    PlaceReconcileReport rep = {};

    create_ok(f, "live", NULL, false);      /* state-0 */
    create_ok(f, "gone", NULL, false);      /* state-1 */
    _cleanup_free_ char *gone = strdup(place_workspace_get(f->record, "gone")->state_dir);
    assert_int_equal(rmdir(gone), 0);

    _cleanup_free_ char *orphan = state_path(f, "state-1", "orphan");
    assert_int_equal(mkdir_p(orphan, 0755), 0);
    write_marker(orphan, "work", "unsaved");
    _cleanup_free_ char *wsdir = NULL;
    assert_true(asprintf(&wsdir, "%s/volumes/state-1/workspaces", f->root) > 0);
    write_marker(wsdir, "README", "not a workspace");
    _cleanup_free_ char *dupe = state_path(f, "state-1", "live");
    assert_int_equal(mkdir_p(dupe, 0755), 0);
    /* Caches (place-cache.h): live's beside it, on state-0, is its own;
     * one of live on state-1 and one of no workspace are strays, and an
     * adopted directory's cache is that workspace's. */
    _cleanup_free_ char *own_cache = NULL, *other_cache = NULL, *ghost_cache = NULL, *orphan_cache = NULL;
    assert_true(asprintf(&own_cache, "%s/volumes/state-0/" PLACE_CACHE_DIR "/live", f->root) > 0);
    assert_true(asprintf(&other_cache, "%s/volumes/state-1/" PLACE_CACHE_DIR "/live", f->root) > 0);
    assert_true(asprintf(&ghost_cache, "%s/volumes/state-1/" PLACE_CACHE_DIR "/ghost", f->root) > 0);
    assert_true(asprintf(&orphan_cache, "%s/volumes/state-1/" PLACE_CACHE_DIR "/orphan", f->root) > 0);
    assert_int_equal(mkdir_p(own_cache, 0755), 0);
    assert_int_equal(mkdir_p(other_cache, 0755), 0);
    assert_int_equal(mkdir_p(orphan_cache, 0755), 0);
    assert_int_equal(mkdir_p(ghost_cache, 0755), 0);
    write_marker(ghost_cache, "f", "derived");
    _cleanup_free_ char *derived1 = NULL;
    assert_true(asprintf(&derived1, "%s/volumes/state-1/" PLACE_CACHE_DIR, f->root) > 0);
    write_marker(derived1, "NOTES", "not a cache");

    size_t active_before = active_on(f->record, "state-1");
    assert_int_equal(place_reconcile(&f->ctx, &rep), 0);
    assert_int_equal(rep.n_adopted, 1);
    assert_true(rep.changed);
    assert_true(report_has(&rep, PLACE_RECONCILE_ADOPTED, "orphan"));
    assert_true(report_has(&rep, PLACE_RECONCILE_IGNORED, "README"));
    assert_true(report_has(&rep, PLACE_RECONCILE_MISSING, "gone"));
    assert_true(report_has(&rep, PLACE_RECONCILE_CONFLICT, "live"));
    assert_true(report_has(&rep, PLACE_RECONCILE_STRAY_CACHE, "ghost"));
    assert_true(report_has(&rep, PLACE_RECONCILE_STRAY_CACHE, "live"));
    assert_false(report_has(&rep, PLACE_RECONCILE_STRAY_CACHE, "orphan"));
    assert_false(report_has(&rep, PLACE_RECONCILE_STRAY_CACHE, "NOTES"));
    assert_true(report_has(&rep, PLACE_RECONCILE_IGNORED, "NOTES"));
    size_t strays = 0;
    for (size_t i = 0; i < rep.n_items; i++)
        if (rep.items[i].kind == PLACE_RECONCILE_STRAY_CACHE) {
            strays++;
            assert_string_equal(rep.items[i].volume, "state-1");
        }
    assert_int_equal(strays, 2);
    place_reconcile_report_done(&rep);
    /* Reported, never deleted. */
    _cleanup_free_ char *ghost_file = NULL;
    assert_true(asprintf(&ghost_file, "%s/f", ghost_cache) > 0);
    assert_int_equal(access(ghost_file, F_OK), 0);

    WorkspaceRecord *o = place_workspace_get(f->record, "orphan");
    assert_non_null(o);
    assert_false(o->active);
    assert_string_equal(o->volume, "state-1");
    assert_string_equal(o->state_dir, orphan);
    assert_int_equal(active_on(f->record, "state-1"), active_before);
    _cleanup_(state_record_freep) StateRecord *disk = load(f);
    assert_non_null(state_record_find_workspace(disk, "orphan"));

    /* Idempotent: nothing adopted twice. */
    size_t n = f->record->n_workspaces;
    assert_int_equal(place_reconcile(&f->ctx, &rep), 0);
    assert_int_equal(rep.n_adopted, 0);
    assert_false(rep.changed);
    assert_int_equal(f->record->n_workspaces, n);
    place_reconcile_report_done(&rep);

    /* The adopted data can be reclaimed, and is intact. */
    create_ok(f, "orphan", NULL, true);
    _cleanup_free_ char *content = NULL, *p = NULL;
    assert_true(asprintf(&p, "%s/work", orphan) > 0);
    assert_int_equal(read_full_file(p, &content, NULL), 0);
    assert_string_equal(content, "unsaved");
}

static void crash_hook_after_mkdir(const char *point) {
    if (streq(point, "after-mkdir"))
        _exit(42);
}
static void crash_hook_after_intent(const char *point) {
    if (streq(point, "after-intent"))
        _exit(43);
}

/* Runs a create in a child process that dies at `hook`'s point, with the
 * record loaded from disk as a restarted agent would. */
static void crash_child(Fixture *f, const char *id, void (*hook)(const char *), int code) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        StateRecord *s = NULL;
        if (state_record_load(f->record_path, &s) < 0)
            _exit(1);
        PlaceContext c = f->ctx;
        c.record = s;
        place_test_hook = hook;
        PlaceCreateRequest req = { .id = id };
        (void) place_workspace_create(&c, &req, NULL, NULL);
        _exit(2); /* the hook did not fire */
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), code);
}

/* Loads the record as the restarted agent would and makes it current. */
static void restart(Fixture *f) {
    state_record_free(f->record);
    f->record = load(f);
    f->ctx.record = f->record;
}

static size_t count_id(const StateRecord *s, const char *id) {
    size_t n = 0;
    for (size_t i = 0; i < s->n_workspaces; i++)
        n += streq(s->workspaces[i]->id, id);
    return n;
}

static void test_crash_between_mkdir_and_record(void **state) {
    Fixture *f = *state;
    PlaceReconcileReport rep = {};
    PlaceError e = {};

    crash_child(f, "crashy", crash_hook_after_mkdir, 42);
    restart(f);

    /* The directory exists and the record knows it (from the intent), as
     * being created: it counts towards the bound (its create goes on). */
    WorkspaceRecord *w = place_workspace_get(f->record, "crashy");
    assert_non_null(w);
    assert_false(w->active);
    assert_true(w->creating);
    _cleanup_free_ char *vol = strdup(w->volume);
    assert_true(exists(w->state_dir));
    assert_int_equal(active_on(f->record, vol), 1);

    assert_int_equal(place_reconcile(&f->ctx, &rep), 0);
    assert_int_equal(rep.n_adopted, 0);               /* no orphan */
    assert_false(report_has(&rep, PLACE_RECONCILE_MISSING, "crashy"));
    place_reconcile_report_done(&rep);
    assert_int_equal(count_id(f->record, "crashy"), 1); /* never twice */

    /* A second create of the id is refused while the first goes on; the
     * restarted agent finishes the first, where it was placed. */
    assert_int_equal(create(f, "crashy", NULL, false, &e), -EEXIST);
    assert_non_null(strstr(e.message, "being created"));
    place_error_done(&e);
    assert_int_equal(place_workspace_resume(&f->ctx, "crashy", &e), 0);
    w = place_workspace_get(f->record, "crashy");
    assert_true(w->active);
    assert_false(w->creating);
    assert_string_equal(w->volume, vol);
    assert_int_equal(active_on(f->record, vol), 1);
    restart(f); /* and it is on disk */
    assert_true(place_workspace_get(f->record, "crashy")->active);

    /* Dying after the intent, before the directory: nothing is missing
     * (the create makes it), and resuming makes it. */
    crash_child(f, "early", crash_hook_after_intent, 43);
    restart(f);
    w = place_workspace_get(f->record, "early");
    assert_non_null(w);
    assert_true(w->creating);
    assert_false(exists(w->state_dir));
    assert_int_equal(place_reconcile(&f->ctx, &rep), 0);
    assert_int_equal(rep.n_adopted, 0);
    assert_false(report_has(&rep, PLACE_RECONCILE_MISSING, "early"));
    place_reconcile_report_done(&rep);
    assert_int_equal(place_workspace_resume(&f->ctx, "early", &e), 0);
    assert_true(exists(place_workspace_get(f->record, "early")->state_dir));
    assert_true(place_workspace_get(f->record, "early")->active);

    /* The older failure mode (directory, no record at all): adopted once. */
    _cleanup_free_ char *stray = state_path(f, "state-1", "stray");
    assert_int_equal(mkdir_p(stray, 0755), 0);
    assert_int_equal(place_reconcile(&f->ctx, &rep), 0);
    assert_int_equal(rep.n_adopted, 1);
    place_reconcile_report_done(&rep);
    restart(f);
    assert_int_equal(place_reconcile(&f->ctx, &rep), 0);
    assert_int_equal(rep.n_adopted, 0);
    place_reconcile_report_done(&rep);
    assert_int_equal(count_id(f->record, "stray"), 1);
    assert_false(place_workspace_get(f->record, "stray")->active);

    /* Every directory on every volume has exactly one record. */
    for (unsigned v = 0; v < 2; v++) {
        _cleanup_free_ char *wsdir = NULL;
        assert_true(asprintf(&wsdir, "%s/volumes/state-%u/workspaces", f->root, v) > 0);
        DIR *d = opendir(wsdir);
        assert_non_null(d);
        struct dirent *de;
        while ((de = readdir(d)))
            if (de->d_name[0] != '.')
                assert_int_equal(count_id(f->record, de->d_name), 1);
        closedir(d);
    }
}

static void test_flush_scope_and_list(void **state) {
    Fixture *f = *state;
    PlaceError e = {};
    create_ok(f, "s1", NULL, false);   /* state-0 */
    create_ok(f, "s2", NULL, false);   /* state-1 */
    create_ok(f, "s3", NULL, false);   /* state-0 */
    create_ok(f, "s4", NULL, false);   /* state-1 */
    assert_int_equal(place_workspace_remove(&f->ctx, "s4", 0, &e), 0);

    PlaceFlushScope fs = {};
    assert_int_equal(place_flush_scope(f->record, 2, &fs), 0);
    assert_int_equal(fs.n_volumes, 2);
    assert_string_equal(fs.volumes[0].volume, "state-0");
    assert_int_equal(fs.volumes[0].n_workspaces, 2);
    assert_string_equal(fs.volumes[0].workspaces[0], "s1");
    assert_string_equal(fs.volumes[0].workspaces[1], "s3");
    assert_string_equal(fs.volumes[0].tenant, "");
    assert_int_equal(fs.volumes[0].bound, 2);
    assert_int_equal(fs.volumes[1].n_workspaces, 1);
    assert_int_equal(fs.volumes[1].n_kept, 1);
    assert_int_equal(fs.n_workspaces, 3);
    assert_string_equal(fs.workspaces[0].id, "s1");
    assert_int_equal(fs.workspaces[0].n_neighbours, 1);
    assert_string_equal(fs.workspaces[0].neighbours[0], "s3");
    assert_string_equal(fs.workspaces[1].id, "s2");
    assert_int_equal(fs.workspaces[1].n_neighbours, 0);
    assert_null(fs.workspaces[1].neighbours[0]);
    place_flush_scope_done(&fs);

    WorkspaceRecord **l = NULL;
    size_t n = 0;
    assert_int_equal(place_workspace_list(f->record, NULL, false, &l, &n), 0);
    assert_int_equal(n, 3);
    assert_string_equal(l[0]->id, "s1");
    assert_string_equal(l[2]->id, "s3");
    free(l);
    assert_int_equal(place_workspace_list(f->record, "state-1", true, &l, &n), 0);
    assert_int_equal(n, 2);
    free(l);
}

static int observe_all_readonly(void *userdata, const VolumeRecord *v, const char *mount,
                                PlaceVolumeObservation *ret) {
    int r = place_volume_observe_default(v, mount, ret);
    if (r >= 0)
        ret->flags |= PLACE_VOLUME_READ_ONLY;
    return r;
}

static void test_readonly_never_used(void **state) {
    Fixture *f = *state;
    PlaceError e = {};
    f->ctx.observe = observe_all_readonly;
    /* Every volume is read-only: a new one is carved rather than writing
     * to them -- and the carved one is read-only too, so create fails. */
    int r = create(f, "ro", NULL, false, &e);
    assert_true(r < 0);
    assert_non_null(e.message);
    place_error_done(&e);
    assert_null(place_workspace_get(f->record, "ro"));
    f->ctx.observe = NULL;
}

static int observe_new_volume_small(void *userdata, const VolumeRecord *v, const char *mount,
                                    PlaceVolumeObservation *ret) {
    *ret = (PlaceVolumeObservation) { .free_bytes = v->index >= 2 ? 512 * KIB : GIB,
                                      .free_inodes = 100000 };
    return 0;
}

/* A freshly carved volume that turns out too small for the reserve (fs
 * overhead) is refused clearly, not used against the rules. */
static void test_carved_too_small(void **state) {
    Fixture *f = *state;
    PlaceError e = {};
    f->ctx.observe = observe_new_volume_small;
    for (unsigned i = 0; i < 4; i++) {
        char id[8];
        snprintf(id, sizeof(id), "f%u", i);
        create_ok(f, id, NULL, false);
    }
    assert_int_equal(create(f, "f4", NULL, false, &e), -ENOSPC);
    assert_int_equal(e.reason, PLACE_REASON_TOO_BIG);
    assert_non_null(strstr(e.message, "workspace_reserve"));
    assert_non_null(strstr(e.message, "state-2"));
    place_error_done(&e);
    assert_int_equal(f->carves, 1);
    assert_null(place_workspace_get(f->record, "f4"));
    f->ctx.observe = NULL;
}

/* state-0 flushes slowly, state-1 fast, newer volumes have no figure yet
 * (as the agent's probe reports them through its observation). */
static int observe_flush(void *userdata, const VolumeRecord *v, const char *mount, PlaceVolumeObservation *ret) {
    int r = place_volume_observe_default(v, mount, ret);
    if (r >= 0 && v->index < 2) {
        ret->flush_known = true;
        ret->flush_usec = v->index == 0 ? 350 * USEC_PER_MSEC : 1 * USEC_PER_MSEC;
    }
    return r;
}

static const char *volume_of(Fixture *f, const char *id) {
    WorkspaceRecord *w = place_workspace_get(f->record, id);
    assert_non_null(w);
    return w->volume;
}

/* Placement by measured flush cost through the whole create path
 * (slow_flush_factor 4, the default slow_flush_floor 20ms): the
 * slow volume is passed over while the fast one has room, a new volume
 * is carved rather than joining it, and only when nothing else can take
 * a workspace does it go there. */
static void test_slow_flush_avoided(void **state) {
    Fixture *f = *state;
    const Pool *p = layout_pool(f->layout, POOL_STATE);
    assert_int_equal(p->slow_flush_factor, 4);
    assert_int_equal(p->slow_flush_floor, 20 * USEC_PER_MSEC);
    f->ctx.observe = observe_flush;

    PlaceCreateRequest req = { .id = "q1" };
    PlaceDecision d = {};
    PlaceCandidate *cands = NULL;
    size_t n = 0;
    PlacePoolConfig cfg;
    assert_int_equal(place_workspace_explain(&f->ctx, &req, &d, &cands, &n, &cfg), 0);
    _cleanup_free_ char *why = NULL;
    PlaceRequest preq = { .id = "q1" };
    assert_int_equal(place_decision_format_why(&d, cands, n, &preq, &cfg, &why), 0);
    assert_non_null(strstr(why, "state-0      rejected: flushes slowly, 350.0 ms recently"));
    assert_non_null(strstr(why, "state-1      rank 1"));
    free(cands);
    place_decision_done(&d);

    create_ok(f, "q1", NULL, false);
    assert_string_equal(volume_of(f, "q1"), "state-1"); /* spread alone: state-0 */
    create_ok(f, "q2", NULL, false);
    assert_string_equal(volume_of(f, "q2"), "state-1");
    assert_int_equal(f->carves, 0);
    create_ok(f, "q3", NULL, false); /* state-1 at its bound: carve */
    assert_string_equal(volume_of(f, "q3"), "state-2");
    assert_int_equal(f->carves, 1);
    create_ok(f, "q4", NULL, false); /* no figure yet: not slow */
    assert_string_equal(volume_of(f, "q4"), "state-2");
    create_ok(f, "q5", NULL, false); /* max_volumes reached: the slow one after all */
    assert_string_equal(volume_of(f, "q5"), "state-0");
    assert_int_equal(f->carves, 1);
    f->ctx.observe = NULL;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_elastic_and_full, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sticky, setup, teardown),
        cmocka_unit_test_setup_teardown(test_destroy_safely, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reconcile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_between_mkdir_and_record, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flush_scope_and_list, setup, teardown),
        cmocka_unit_test_setup_teardown(test_readonly_never_used, setup, teardown),
        cmocka_unit_test_setup_teardown(test_carved_too_small, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slow_flush_avoided, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
