/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The layout language: every key, every error class, and the exact
 * line:column of each error (fixtures in tests/fixtures/layouts/).
 */
#include <setjmp.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "layout.h"
#include "util.h"

#define FIXTURES LAYOUTD_TEST_FIXTURES "/layouts/"
#define LAYOUTS LAYOUTD_SOURCE_DIR "/layouts/"

typedef struct Expect {
    unsigned line, column;
    const char *needle; /* a substring the message must contain */
} Expect;

static void dump_errors(const LayoutErrors *e) {
    for (size_t i = 0; i < e->n; i++)
        fprintf(stderr, "  %s:%u:%u: %s\n", e->items[i].file, e->items[i].line, e->items[i].column,
                e->items[i].message);
}

static void check_errors(const char *what, int r, const LayoutErrors *errors, const Expect *exp, size_t n) {
    if (r != -EINVAL || errors->n != n) {
        fprintf(stderr, "%s: r=%d, %zu errors, expected %zu:\n", what, r, errors->n, n);
        dump_errors(errors);
    }
    assert_int_equal(r, -EINVAL);
    if (getenv("LAYOUT_TEST_KEEP_GOING") && errors->n != n)
        return;
    assert_int_equal(errors->n, n);
    for (size_t i = 0; i < n; i++) {
        const LayoutError *e = &errors->items[i];
        if (e->line != exp[i].line || e->column != exp[i].column || !strstr(e->message, exp[i].needle)) {
            fprintf(stderr, "%s: error %zu: got %u:%u '%s', expected %u:%u '...%s...'\n", what, i, e->line,
                    e->column, e->message, exp[i].line, exp[i].column, exp[i].needle);
            if (!getenv("LAYOUT_TEST_KEEP_GOING"))
                fail();
        }
    }
}

#define CHECK_FIXTURE(name, ...)                                                          \
    do {                                                                                  \
        static const Expect _e[] = { __VA_ARGS__ };                                       \
        LayoutErrors _errors = {};                                                        \
        Layout *_l = NULL;                                                                \
        int _r = layout_parse_file(FIXTURES name, &_l, &_errors);                         \
        assert_null(_l);                                                                  \
        check_errors(name, _r, &_errors, _e, ELEMENTSOF(_e));                             \
        for (size_t _i = 0; _i < _errors.n; _i++)                                         \
            assert_string_equal(_errors.items[_i].file, FIXTURES name);                   \
        layout_errors_clear(&_errors);                                                    \
    } while (0)

#define CHECK_STRING(yaml, ...)                                                           \
    do {                                                                                  \
        static const Expect _e[] = { __VA_ARGS__ };                                       \
        LayoutErrors _errors = {};                                                        \
        Layout *_l = NULL;                                                                \
        const char *_y = (yaml);                                                          \
        int _r = layout_parse_string(_y, strlen(_y), "inline.yaml", &_l, &_errors);       \
        assert_null(_l);                                                                  \
        check_errors(_y, _r, &_errors, _e, ELEMENTSOF(_e));                               \
        layout_errors_clear(&_errors);                                                    \
    } while (0)

static Layout *parse_ok_file(const char *path) {
    LayoutErrors errors = {};
    Layout *l = NULL;
    int r = layout_parse_file(path, &l, &errors);
    if (r < 0) {
        fprintf(stderr, "%s: r=%d\n", path, r);
        dump_errors(&errors);
    }
    assert_int_equal(r, 0);
    assert_int_equal(errors.n, 0);
    assert_non_null(l);
    return l;
}

static Layout *parse_ok(const char *yaml) {
    LayoutErrors errors = {};
    Layout *l = NULL;
    int r = layout_parse_string(yaml, strlen(yaml), "inline.yaml", &l, &errors);
    if (r < 0) {
        fprintf(stderr, "%s\n r=%d\n", yaml, r);
        dump_errors(&errors);
    }
    assert_int_equal(r, 0);
    assert_non_null(l);
    return l;
}

/* ---- valid layouts ---- */

static void test_valid_full(void **state) {
    _cleanup_(layout_freep) Layout *l = parse_ok_file(FIXTURES "valid-full.yaml");
    assert_string_equal(l->source, FIXTURES "valid-full.yaml");
    assert_int_equal(l->version, 1);
    assert_string_equal(l->root, "/srv/layoutd"); /* trailing slash normalised */

    const Pool *s = layout_pool(l, POOL_STATE);
    assert_non_null(s);
    assert_int_equal(s->role, POOL_STATE);
    assert_true(s->declared);
    assert_int_equal(s->backend, BACKEND_LOOP_XFS);
    assert_int_equal(s->volume_size, 2 * GIB);
    assert_int_equal(s->min_volumes, 2);
    assert_int_equal(s->max_volumes, 10);
    assert_int_equal(s->workspaces_per_volume, 5);
    assert_false(s->direct_io);
    assert_int_equal(s->writeback.max_ratio, 10);
    assert_int_equal(s->writeback.max_bytes, 128 * MIB);
    assert_int_equal(s->writeback.strict_limit, 1);
    assert_int_equal(strv_length((const char *const *) s->mkfs_options), 2);
    assert_string_equal(s->mkfs_options[0], "-m");
    assert_string_equal(s->mkfs_options[1], "crc=1");
    assert_string_equal(s->mount_options, "noatime,nodiratime");
    assert_int_equal(s->placement, PLACEMENT_PACK);
    assert_true(s->tenant_isolation);
    assert_int_equal(s->workspace_reserve, 128 * MIB);
    assert_int_equal(s->workspace_reserve_inodes, 10000);
    assert_int_equal(s->shards, 1);
    assert_false(s->has_vdo);

    const Pool *c = layout_pool(l, POOL_CONTENT);
    assert_non_null(c);
    assert_int_equal(c->role, POOL_CONTENT);
    assert_int_equal(c->backend, BACKEND_VDO_XFS);
    assert_int_equal(c->volume_size, TIB);
    assert_int_equal(c->shards, 3);
    assert_int_equal(c->min_volumes, 3);
    assert_int_equal(c->max_volumes, 3);
    assert_true(c->direct_io);
    assert_true(c->has_vdo);
    assert_int_equal(c->vdo.logical_size, 4 * TIB);
    assert_false(c->vdo.compression);
    assert_false(c->vdo.deduplication);
    assert_int_equal(c->vdo.fstrim_interval, 12 * 3600 * USEC_PER_SEC);
    assert_int_equal(c->vdo.block_map_cache, 512 * MIB);
    assert_null(c->vdo.device);
    assert_int_equal(c->writeback.max_ratio, -1);
    assert_int_equal(c->writeback.max_bytes, 0);
    assert_int_equal(c->writeback.strict_limit, -1);

    const WorkspaceConfig *w = &l->workspace;
    assert_string_equal(w->mount_root, "/srv/ws");
    assert_false(w->mount_root_is_default);
    assert_int_equal(strv_length((const char *const *) w->command), 9);
    assert_string_equal(w->command[0], "/opt/wsfs/bin/wsfs");
    assert_string_equal(w->command[1], "--id={id}");
    assert_string_equal(w->command[8], "{mountpoint}");
    assert_string_equal(w->user, "wsfs");
    assert_string_equal(w->group, "wsfs-users");
    assert_int_equal(strv_length((const char *const *) w->environment), 2);
    assert_string_equal(w->environment[0], "RUST_LOG=debug");
    assert_string_equal(w->environment[1], "WSFS_THREADS=4");
    assert_int_equal(w->dir_mode, 0700);
    assert_int_equal(w->restart, RESTART_ALWAYS);
    assert_int_equal(w->backoff_initial, 200 * USEC_PER_MSEC);
    assert_int_equal(w->backoff_max, 30 * USEC_PER_SEC);
    assert_int_equal(w->backoff_reset_after, 600 * USEC_PER_SEC);
    assert_int_equal(w->crashloop_deaths, 3);
    assert_int_equal(w->crashloop_interval, 60 * USEC_PER_SEC);
    assert_int_equal(w->ready_timeout, 5 * USEC_PER_SEC);
    assert_int_equal(w->stop_timeout, 15 * USEC_PER_SEC);
    assert_int_equal(w->hang_timeout, 3600 * USEC_PER_SEC);
    assert_true(w->restart_on_hang);
    assert_int_equal(w->n_static_workspaces, 3);
    assert_string_equal(w->static_workspaces[0].id, "ws-1");
    assert_string_equal(w->static_workspaces[0].tenant, "acme");
    assert_string_equal(w->static_workspaces[1].id, "ws-2");
    assert_null(w->static_workspaces[1].tenant);
    assert_string_equal(w->static_workspaces[2].id, "ws-3");
    assert_string_equal(w->static_workspaces[2].tenant, "globex");
    assert_int_equal(w->static_workspaces[2].quota, 0);

    const ApiConfig *a = &l->api;
    assert_string_equal(a->socket_path, "/run/layoutd-test/api.sock");
    assert_string_equal(a->socket_group, "wheel");
    assert_int_equal(a->socket_mode, 0600);
    assert_int_equal(a->flush_probe_interval, 60 * USEC_PER_SEC);
    assert_int_equal(a->max_connections, 16);
    assert_int_equal(a->max_body, MIB);
    assert_int_equal(a->request_timeout, 2 * USEC_PER_SEC);
}

static void test_defaults(void **state) {
    _cleanup_(layout_freep) Layout *l = parse_ok_file(FIXTURES "minimal.yaml");
    assert_string_equal(l->root, "/var/lib/layoutd");
    const Pool *s = layout_pool(l, POOL_STATE);
    assert_non_null(s);
    assert_null(layout_pool(l, POOL_CONTENT));
    assert_int_equal(s->backend, BACKEND_LOOP_EXT4);
    assert_int_equal(s->volume_size, GIB);
    assert_int_equal(s->min_volumes, 1);
    assert_int_equal(s->max_volumes, 16);
    assert_int_equal(s->workspaces_per_volume, 4);
    assert_true(s->direct_io);
    assert_int_equal(s->writeback.max_ratio, -1);
    assert_int_equal(s->writeback.max_bytes, 0);
    assert_int_equal(s->writeback.strict_limit, -1);
    assert_null(s->mkfs_options);
    assert_null(s->mount_options);
    assert_int_equal(s->placement, PLACEMENT_SPREAD);
    assert_false(s->tenant_isolation);
    assert_int_equal(s->workspace_reserve, 64 * MIB);
    assert_int_equal(s->workspace_reserve_inodes, 4096);
    assert_int_equal(s->shards, 1);
    assert_false(s->has_vdo);

    const WorkspaceConfig *w = &l->workspace;
    assert_string_equal(w->mount_root, "/var/lib/layoutd/workspaces");
    assert_true(w->mount_root_is_default);
    assert_string_equal(w->command[0], "/usr/libexec/layoutd/layoutd-wsfs");
    assert_string_equal(w->user, "root");
    assert_null(w->group);
    assert_non_null(w->environment);
    assert_null(w->environment[0]);
    assert_int_equal(w->dir_mode, 0750);
    assert_int_equal(w->restart, RESTART_ON_FAILURE);
    assert_int_equal(w->backoff_initial, USEC_PER_SEC);
    assert_int_equal(w->backoff_max, 60 * USEC_PER_SEC);
    assert_int_equal(w->backoff_reset_after, 120 * USEC_PER_SEC);
    assert_int_equal(w->crashloop_deaths, 5);
    assert_int_equal(w->crashloop_interval, 300 * USEC_PER_SEC);
    assert_int_equal(w->ready_timeout, 10 * USEC_PER_SEC);
    assert_int_equal(w->stop_timeout, 10 * USEC_PER_SEC);
    assert_int_equal(w->hang_timeout, 120 * USEC_PER_SEC);
    assert_false(w->restart_on_hang);
    assert_int_equal(w->n_static_workspaces, 0);

    assert_string_equal(l->api.socket_path, "/run/layoutd/api.sock");
    assert_string_equal(l->api.socket_group, "layoutd");
    assert_int_equal(l->api.socket_mode, 0660);
    assert_null(l->api.readonly_socket_path);
    assert_int_equal(l->api.readonly_socket_mode, 0666);
    assert_int_equal(l->api.flush_probe_interval, 30 * USEC_PER_SEC);
    assert_int_equal(l->api.max_connections, 4096);
    assert_int_equal(l->api.max_body, 64 * KIB);
    assert_int_equal(l->api.request_timeout, 10 * USEC_PER_SEC);
}

static void test_content_and_vdo_defaults(void **state) {
    _cleanup_(layout_freep) Layout *l = parse_ok("version: 1\n"
                                                 "pools:\n"
                                                 "  state: {backend: dir}\n"
                                                 "  content: {backend: vdo-xfs, volume_size: 10GiB}\n");
    const Pool *s = layout_pool(l, POOL_STATE), *c = layout_pool(l, POOL_CONTENT);
    assert_int_equal(s->backend, BACKEND_DIR);
    assert_false(s->direct_io); /* dir: no loop device */
    assert_int_equal(s->volume_size, 0);
    assert_int_equal(c->shards, 1);
    assert_int_equal(c->min_volumes, 1);
    assert_int_equal(c->max_volumes, 1);
    assert_int_equal(c->workspaces_per_volume, 0);
    assert_true(c->has_vdo);
    assert_int_equal(c->vdo.logical_size, 30 * GIB);
    assert_true(c->vdo.compression);
    assert_true(c->vdo.deduplication);
    assert_int_equal(c->vdo.fstrim_interval, 86400 * USEC_PER_SEC);
    assert_int_equal(c->vdo.block_map_cache, 128 * MIB);
    assert_null(c->vdo.device);
}

static void test_shipped_layouts(void **state) {
    static const char *const files[] = { "default.yaml", "ext4-dio.yaml", "xfs-vdo.yaml", "dev-dir.yaml" };
    for (size_t i = 0; i < ELEMENTSOF(files); i++) {
        char path[512];
        snprintf(path, sizeof path, LAYOUTS "%s", files[i]);
        Layout *l = parse_ok_file(path);
        assert_non_null(layout_pool(l, POOL_STATE));
        assert_non_null(layout_pool(l, POOL_CONTENT));
        layout_free(l);
    }

    _cleanup_(layout_freep) Layout *d = parse_ok_file(LAYOUTS "default.yaml");
    const Pool *s = layout_pool(d, POOL_STATE), *c = layout_pool(d, POOL_CONTENT);
    assert_string_equal(d->root, "/var/lib/layoutd");
    assert_int_equal(s->backend, BACKEND_LOOP_XFS);
    assert_int_equal(s->volume_size, 512 * MIB);
    assert_int_equal(s->min_volumes, 1);
    assert_int_equal(s->max_volumes, 8);
    assert_int_equal(s->workspaces_per_volume, 3);
    assert_true(s->growth.enabled);
    assert_int_equal(s->growth.threshold, 70);
    assert_int_equal(s->growth.max_size, 8 * GIB);
    assert_int_equal(s->growth.host_reserve, 2 * GIB);
    assert_int_equal(c->backend, BACKEND_LOOP_XFS);
    assert_int_equal(c->volume_size, GIB);
    assert_int_equal(c->shards, 1);
    assert_true(c->growth.enabled);
    assert_int_equal(c->growth.max_size, 16 * GIB);
    assert_true(c->gc.enabled);
    assert_string_equal(c->gc.command[0], "/usr/libexec/layoutd/layoutd-wsfs");
    static const char *const argv[] = { "/usr/libexec/layoutd/layoutd-wsfs", "--state", "{state_dir}", "--content",
                                        "{content_dirs}", "{mountpoint}", NULL };
    assert_true(strv_equal((const char *const *) d->workspace.command, argv));

    _cleanup_(layout_freep) Layout *v = parse_ok_file(LAYOUTS "xfs-vdo.yaml");
    assert_int_equal(layout_pool(v, POOL_CONTENT)->backend, BACKEND_VDO_XFS);
    _cleanup_(layout_freep) Layout *x = parse_ok_file(LAYOUTS "dev-dir.yaml");
    assert_int_equal(layout_pool(x, POOL_STATE)->backend, BACKEND_DIR);
    assert_int_equal(layout_pool(x, POOL_CONTENT)->backend, BACKEND_DIR);
    _cleanup_(layout_freep) Layout *e = parse_ok_file(LAYOUTS "ext4-dio.yaml");
    assert_true(layout_pool(e, POOL_STATE)->direct_io);
    assert_true(layout_pool(e, POOL_CONTENT)->direct_io);
}

/* ---- the acceptance-criteria errors ---- */

static void test_misspelled_key(void **state) {
    CHECK_FIXTURE("misspelled-key.yaml", { 6, 5, "did you mean 'workspaces_per_volume'?" });
}

static void test_size_parsecs(void **state) {
    CHECK_FIXTURE("size-parsecs.yaml", { 4, 18, "volume_size: invalid size '12 parsecs'" });
}

static void test_vdo_key_on_ext4(void **state) {
    CHECK_FIXTURE("vdo-key-on-ext4.yaml",
                  { 6, 5, "'compression' is a VDO option: it belongs under 'vdo:' of a pool with backend vdo-xfs "
                          "(this pool's backend is loop-ext4)" });
    CHECK_FIXTURE("vdo-block-on-ext4.yaml",
                  { 5, 5, "'vdo:' applies only to backend vdo-xfs (this pool's backend is loop-ext4)" },
                  { 10, 5, "'compression' is a VDO option: it belongs under 'vdo:' of this pool" });
}

static void test_duplicate_key(void **state) {
    CHECK_FIXTURE("duplicate-key.yaml", { 6, 5, "duplicate key 'volume_size' in pool 'state' (first given at line 4, "
                                                "column 5)" });
    CHECK_STRING("version: 1\nversion: 1\npools: {state: {}}\n", { 2, 1, "duplicate key 'version'" });
    CHECK_STRING("version: 1\npools: {state: {}}\nworkspace:\n  environment:\n    A: 1\n    A: 2\n",
                 { 6, 5, "duplicate key 'A' in environment" });
}

/* ---- error classes ---- */

static void test_syntax_errors(void **state) {
    CHECK_FIXTURE("syntax-error.yaml", { 5, 4, "YAML syntax error: did not find expected key" });
    CHECK_FIXTURE("syntax-unclosed.yaml", { 3, 1, "YAML syntax error: did not find expected ',' or '}'" });
    CHECK_FIXTURE("multi-doc.yaml", { 3, 1, "a second YAML document" });
    CHECK_STRING("version: 1\npools: {state: {}}\n\tfoo: 1\n", { 3, 1, "YAML syntax error" });
}

static void test_wrong_types(void **state) {
    CHECK_FIXTURE("wrong-types.yaml",
                  { 3, 3, "pools must be a mapping (key: value lines), got a list" },
                  { 5, 12, "command: expected a list (the argv" },
                  { 6, 16, "environment must be a mapping" },
                  { 7, 12, "backoff must be a mapping (key: value lines), got a scalar" },
                  { 8, 15, "workspaces: expected a list of {id, tenant} mappings, got a mapping" },
                  { 9, 6, "api must be a mapping" });
    CHECK_FIXTURE("wrong-types-2.yaml",
                  { 1, 10, "version: must be 1" },
                  { 2, 7, "root: expected an absolute path, got a list" },
                  { 5, 14, "backend: unknown value '3'" },
                  { 6, 16, "direct_io: expected true or false, got 'maybe'" },
                  { 7, 18, "min_volumes: expected a whole number" },
                  { 8, 19, "mkfs_options: expected a list of strings, got a scalar" },
                  { 9, 16, "writeback must be a mapping" },
                  { 10, 18, "volume_size: expected a size such as 512MiB or 4G, got a mapping" });
    CHECK_FIXTURE("not-a-mapping.yaml", { 1, 1, "the layout must be a mapping" });
    CHECK_STRING("version: 1\npools: {state: {}}\n[a]: 1\n", { 3, 1, "keys in the layout must be plain strings" });
    CHECK_STRING("version: 1\npools: {state: {direct_io: yes}}\n", { 2, 28, "write true or false" });
    CHECK_STRING("version: 1\npools: {state: {volume_size: }}\n", { 2, 30, "expected a size" });
}

static void test_alias(void **state) {
    CHECK_FIXTURE("alias.yaml", { 5, 12, "YAML aliases (*pool) are not supported" });
}

static void test_empty(void **state) {
    CHECK_FIXTURE("empty.yaml", { 0, 0, "the file is empty" });
    CHECK_FIXTURE("comments-only.yaml", { 0, 0, "the file is empty" });
    LayoutErrors errors = {};
    Layout *l = NULL;
    assert_int_equal(layout_parse_string(NULL, 0, "null", &l, &errors), -EINVAL);
    assert_int_equal(errors.n, 1);
    layout_errors_clear(&errors);
}

static void test_non_utf8(void **state) {
    CHECK_FIXTURE("non-utf8.yaml", { 4, 20, "must be UTF-8" });
    /* An embedded NUL byte in the input is a reader error as well. */
    static const char nul[] = "version: 1\npools:\0 {}\n";
    LayoutErrors errors = {};
    Layout *l = NULL;
    assert_int_equal(layout_parse_string(nul, sizeof nul - 1, "nul.yaml", &l, &errors), -EINVAL);
    assert_int_equal(errors.n, 1);
    assert_int_equal(errors.items[0].line, 2);
    assert_int_equal(errors.items[0].column, 7);
    layout_errors_clear(&errors);
    /* A "\0" escape inside a quoted value. */
    CHECK_STRING("version: 1\npools: {state: {mount_options: \"a\\0b\"}}\n", { 2, 32, "NUL character" });
}

static void test_huge_numbers(void **state) {
    CHECK_FIXTURE("huge-numbers.yaml",
                  { 4, 18, "size '99999999999999999999999' is too large" },
                  { 5, 18, "max_volumes: number too large" },
                  { 6, 28, "must be between 1 and 1024, got 4294967297" },
                  { 7, 24, "too large" },
                  { 9, 18, "duration '99999999999999999999d' is too large" });
}

static void test_negative_numbers(void **state) {
    CHECK_FIXTURE("negative-numbers.yaml",
                  { 4, 18, "volume_size: a size must not be negative" },
                  { 5, 18, "min_volumes: must not be negative" },
                  { 6, 28, "workspaces_per_volume: must not be negative" },
                  { 8, 17, "stop_timeout: a duration must not be negative" });
}

/* A quota is the layout's to ask for and placement's to refuse where the
 * host cannot enforce it (place_quota_support): the layout parses. */
static void test_quota(void **state) {
    _cleanup_(layout_freep) Layout *l = parse_ok_file(FIXTURES "quota.yaml");
    assert_int_equal(l->workspace.n_static_workspaces, 1);
    assert_int_equal(l->workspace.static_workspaces[0].quota, 10ULL << 30);
    assert_int_equal(layout_pool(l, POOL_STATE)->quota_overcommit, 100);

    _cleanup_(layout_freep) Layout *o = parse_ok("version: 1\npools:\n  state:\n    backend: loop-xfs\n"
                                                 "    volume_size: 1G\n    quota_overcommit: 150%\n");
    assert_int_equal(layout_pool(o, POOL_STATE)->quota_overcommit, 150);
    CHECK_STRING("version: 1\npools:\n  state:\n    backend: loop-xfs\n    volume_size: 1G\n"
                 "    quota_overcommit: 1.5\n",
                 { 6, 23, "quota_overcommit" });
    CHECK_STRING("version: 1\npools:\n  state:\n    backend: dir\nworkspace:\n  workspaces:\n"
                 "    - id: ws-1\n      quota: lots\n",
                 { 8, 14, "quota" });
}

static void test_cross_field(void **state) {
    CHECK_FIXTURE("cross-field.yaml",
                  { 5, 18, "XFS needs at least 300MiB" },
                  { 6, 18, "min_volumes (9) must not be more than max_volumes (4)" },
                  { 7, 24, "workspace_reserve: 1GiB is more than the volume_size" },
                  { 13, 21, "vdo.logical_size (512MiB) must be at least volume_size (1GiB)" },
                  { 14, 24, "vdo.block_map_cache: must be at least 128MiB" },
                  { 17, 14, "backoff: initial (10s) must not be more than max (5s)" });
    CHECK_FIXTURE("missing-state.yaml",
                  { 1, 10, "version: must be 1" },
                  { 2, 1, "the state pool must be declared" });
    CHECK_FIXTURE("dir-backend.yaml",
                  { 5, 5, "volume_size has no meaning for backend dir" },
                  { 6, 16, "direct_io: the dir backend has no loop device" },
                  { 7, 5, "mkfs_options: backend dir makes no filesystem" },
                  { 8, 5, "mount_options: backend dir mounts nothing" },
                  { 9, 5, "writeback limits need a loop device" },
                  { 13, 5, "'placement' applies to the state pool only" });
    CHECK_FIXTURE("size-units.yaml",
                  { 4, 18, "'GB' is ambiguous" },
                  { 7, 18, "must be a multiple of 4 KiB" });
}

static void test_command(void **state) {
    CHECK_FIXTURE("command-errors.yaml",
                  { 5, 13, "command[0]: must be an absolute path" },
                  { 5, 31, "unknown placeholder '{ident}'" },
                  { 5, 46, "unterminated placeholder" });
    CHECK_FIXTURE("command-empty.yaml", { 5, 12, "command: must not be empty" });
    CHECK_STRING("version: 1\npools: {state: {}}\nworkspace: {command: [\"/bin/{id}\"]}\n",
                 { 3, 23, "placeholders are not allowed in the program path" });
    CHECK_STRING("version: 1\npools: {state: {}}\nworkspace: {command: [/bin/x, \"{mountpont}\"]}\n",
                 { 3, 31, "did you mean '{mountpoint}'?" });
    CHECK_STRING("version: 1\npools: {state: {}}\nworkspace: {command: [/bin/x, \"a}b\"]}\n",
                 { 3, 31, "stray '}'" });
    Layout *l = parse_ok("version: 1\npools: {state: {}}\nworkspace: {command: [/bin/x, \"{{json}}\", \"--s={state_dir}\"]}\n");
    assert_string_equal(l->workspace.command[1], "{{json}}"); /* kept verbatim: supervise expands it */
    layout_free(l);
    CHECK_STRING("version: 1\npools: {state: {}}\nworkspace: {command: [/bin/x, [a]]}\n",
                 { 3, 31, "command: expected a string, got a list" });
}

static void test_names(void **state) {
    CHECK_FIXTURE("names.yaml",
                  { 7, 15, "invalid tenant name 'this-tenant-name-is-far-too-long-to-be-valid'" },
                  { 8, 11, "duplicate workspace id 'ok-1' (first given at line 6, column 11)" },
                  { 9, 11, "invalid workspace id '-leading-dash'" },
                  { 10, 7, "a static workspace needs an 'id'" });
    assert_true(layout_name_is_valid("a", 1));
    assert_true(layout_name_is_valid("ws-1", LAYOUT_NAME_MAX));
    assert_true(layout_name_is_valid("0abc", LAYOUT_NAME_MAX));
    assert_false(layout_name_is_valid("ab", 1));
    assert_false(layout_name_is_valid("", 10));
    assert_false(layout_name_is_valid(NULL, 10));
    assert_false(layout_name_is_valid("-a", 10));
    assert_false(layout_name_is_valid("A", 10));
    assert_false(layout_name_is_valid("a_b", 10));
    assert_false(layout_name_is_valid("a.b", 10));
}

/* One rule per line, each with its exact position. */
static void test_rules(void **state) {
#define HDR "version: 1\npools:\n  state:\n"
    Layout *l;
    /* line 4, column 5 is the first key under the state pool */
    CHECK_STRING(HDR "    backend: loop-ext5\n", { 4, 14, "did you mean 'loop-ext4'?" });
    CHECK_STRING(HDR "    volume_size: 32MiB\n", { 4, 18, "ext4 needs at least 64MiB" });
    CHECK_STRING(HDR "    volume_size: 100000K\n    backend: loop-xfs\n", { 4, 18, "XFS needs at least 300MiB" });
    CHECK_STRING(HDR "    volume_size: 64MiB\n    backend: loop-btrfs\n", { 4, 18, "btrfs needs at least 128MiB" });
    CHECK_STRING(HDR "    backend: loop-btrfz\n", { 4, 14, "did you mean 'loop-btrfs'?" });
    CHECK_STRING(HDR "    backend: nope\n",
                 { 4, 14, "expected one of loop-ext4, loop-xfs, loop-btrfs, vdo-xfs, dir" });
    /* btrfs reports no inode count: a reserve would refuse every volume. */
    CHECK_STRING(HDR "    backend: loop-btrfs\n    workspace_reserve_inodes: 64\n",
                 { 5, 5, "btrfs allocates inodes as it needs them and reports no inode count" });
    CHECK_STRING(HDR "    max_volumes: 0\n", { 4, 18, "max_volumes: must be between 1 and 1024, got 0" });
    CHECK_STRING(HDR "    max_volumes: 1025\n", { 4, 18, "max_volumes: must be between 1 and 1024" });
    CHECK_STRING(HDR "    workspaces_per_volume: 0\n", { 4, 28, "must be between 1 and 1024, got 0" });
    CHECK_STRING(HDR "    writeback: {max_ratio: 101}\n", { 4, 28, "writeback.max_ratio: must be between 0 and 100" });
    CHECK_STRING(HDR "    writeback: {max_bytes: lots}\n", { 4, 28, "writeback.max_bytes: invalid size 'lots'" });
    CHECK_STRING(HDR "    writeback: {strict: true}\n", { 4, 17, "did you mean 'strict_limit'?" });
    CHECK_STRING(HDR "    mount_options: noatime, discard\n", { 4, 20, "without spaces" });
    CHECK_STRING(HDR "    mount_options: noatime,suid\n", { 4, 20, "'suid' is refused" });
    CHECK_STRING(HDR "    mount_options: dev\n", { 4, 20, "'dev' is refused" });
    CHECK_STRING(HDR "    placement: random\n", { 4, 16, "unknown value 'random'" });
    CHECK_STRING(HDR "    tenant_isolation: 1\n", { 4, 23, "expected true or false" });
    CHECK_STRING(HDR "    shards: 2\n", { 4, 5, "'shards' applies to the content pool only" });
    CHECK_STRING(HDR "    workspace_reserve_inodes: 4294967296\n", { 4, 31, "must be between 0 and 4294967295" });
    CHECK_STRING(HDR "    vdo: {}\n", { 4, 5, "'vdo:' applies only to backend vdo-xfs" });
    CHECK_STRING(HDR "    mkfs_options: [-q, ~]\n", { 4, 24, "mkfs_options: expected a string, got an empty value" });
    CHECK_STRING(HDR "    min_volumes: 3\n    max_volumes: 2\n", { 4, 18, "min_volumes (3) must not be more" });
    /* The inode reserve follows the filesystem's row: its default is kept
     * where inodes are fixed at mkfs time (ext4, and dir: the host's may
     * be), 0 where they are allocated as needed; XFS, which reports a
     * limit, keeps one that is given. */
    static const struct { const char *backend, *extra; uint64_t want; } reserves[] = {
        { "loop-ext4", "", 4096 },  { "dir", "", 4096 },   { "loop-xfs", "", 0 },
        { "loop-btrfs", "", 0 },    { "loop-xfs", "    workspace_reserve_inodes: 100\n", 100 },
    };
    for (size_t i = 0; i < ELEMENTSOF(reserves); i++) {
        char *y = NULL;
        assert_true(asprintf(&y, HDR "    backend: %s\n%s", reserves[i].backend, reserves[i].extra) > 0);
        Layout *r = parse_ok(y);
        assert_int_equal(layout_pool(r, POOL_STATE)->workspace_reserve_inodes, reserves[i].want);
        layout_free(r);
        free(y);
    }
    /* preallocate: only where the pool has loop backing files of its own. */
    CHECK_STRING(HDR "    backend: dir\n    preallocate: true\n",
                 { 5, 18, "preallocate: applies to the backing files of loop-ext4, loop-xfs and loop-btrfs" });
    CHECK_STRING(HDR "    backend: vdo-xfs\n    volume_size: 8GiB\n    preallocate: true\n",
                 { 6, 18, "backend vdo-xfs has none of its own" });
    CHECK_STRING(HDR "    preallocate: yes please\n", { 4, 18, "preallocate: expected true or false" });
    static const struct { const char *backend, *extra; bool want; } preallocs[] = {
        { "loop-ext4", "", false },
        { "loop-ext4", "    preallocate: true\n", true },
        { "loop-xfs", "    preallocate: true\n", true },
        { "loop-btrfs", "    preallocate: true\n", true },
        { "loop-xfs", "    preallocate: false\n", false },
        { "dir", "    preallocate: false\n", false }, /* false is what dir is */
    };
    for (size_t i = 0; i < ELEMENTSOF(preallocs); i++) {
        char *y = NULL;
        assert_true(asprintf(&y, HDR "    backend: %s\n%s", preallocs[i].backend, preallocs[i].extra) > 0);
        Layout *r = parse_ok(y);
        assert_int_equal(layout_pool(r, POOL_STATE)->preallocate, preallocs[i].want);
        layout_free(r);
        free(y);
    }
    /* Placement by measured flush cost: off by default (0; the floor
     * 20ms), 1 would be noise. */
    l = parse_ok(HDR "    backend: loop-xfs\n");
    assert_int_equal(layout_pool(l, POOL_STATE)->slow_flush_factor, 0);
    assert_int_equal(layout_pool(l, POOL_STATE)->slow_flush_floor, 20 * USEC_PER_MSEC);
    layout_free(l);
    l = parse_ok(HDR "    slow_flush_factor: 4\n    slow_flush_floor: 250ms\n");
    assert_int_equal(layout_pool(l, POOL_STATE)->slow_flush_factor, 4);
    assert_int_equal(layout_pool(l, POOL_STATE)->slow_flush_floor, 250 * USEC_PER_MSEC);
    layout_free(l);
    CHECK_STRING(HDR "    slow_flush_factor: 1\n", { 4, 24, "slow_flush_factor: must be 0 (off) or at least 2" });
    CHECK_STRING(HDR "    slow_flush_factor: 1001\n", { 4, 24, "must be between 0 and 1000" });
    CHECK_STRING(HDR "    slow_flush_floor: 10us\n", { 4, 23, "slow_flush_floor: must be between" });
    /* an explicit min_volumes above the default max raises max */
    l = parse_ok(HDR "    min_volumes: 20\n");
    assert_int_equal(layout_pool(l, POOL_STATE)->max_volumes, 20);
    layout_free(l);

#define CONTENT "version: 1\npools:\n  state: {}\n  content:\n"
    CHECK_STRING(CONTENT "    shards: 0\n", { 5, 13, "shards: must be between 1 and 64" });
    CHECK_STRING(CONTENT "    shards: 2\n    max_volumes: 3\n", { 6, 18, "max_volumes must equal shards (2)" });
    CHECK_STRING(CONTENT "    workspaces_per_volume: 3\n", { 5, 5, "applies to the state pool only" });
    CHECK_STRING(CONTENT "    slow_flush_factor: 3\n", { 5, 5, "applies to the state pool only" });
    CHECK_STRING(CONTENT "    backend: vdo-xfs\n    vdo: {device: sdb}\n", { 6, 19, "expected an absolute path" });
    CHECK_STRING(CONTENT "    backend: vdo-xfs\n    vdo: {device: /srv/x}\n", { 6, 19, "below /dev/" });
    CHECK_STRING(CONTENT "    backend: vdo-xfs\n    shards: 2\n    vdo: {device: /dev/sdb}\n",
                 { 7, 19, "a block device holds exactly one volume" });
    CHECK_STRING(CONTENT "    backend: vdo-xfs\n    vdo: {fstrim_interval: 10s}\n", { 6, 28, "at least 1min" });
    CHECK_STRING(CONTENT "    backend: vdo-xfs\n    vdo: {compresion: true}\n", { 6, 11, "did you mean 'compression'?" });
    CHECK_STRING(CONTENT "    backend: vdo-xfs\n    mount_options: noatime,discard\n", { 6, 20, "stalls all I/O" });
    l = parse_ok(CONTENT "    backend: vdo-xfs\n    vdo: {device: /dev/sdb, fstrim_interval: 0}\n");
    assert_string_equal(layout_pool(l, POOL_CONTENT)->vdo.device, "/dev/sdb");
    assert_int_equal(layout_pool(l, POOL_CONTENT)->vdo.fstrim_interval, 0);
    layout_free(l);

#define WS "version: 1\npools: {state: {}}\nworkspace:\n"
    CHECK_STRING(WS "  mount_root: ws\n", { 4, 15, "mount_root: expected an absolute path" });
    CHECK_STRING(WS "  mount_root: /a/../b\n", { 4, 15, "'.' and '..' are not allowed" });
    CHECK_STRING(WS "  user: \"a b\"\n", { 4, 9, "user: invalid name 'a b'" });
    CHECK_STRING(WS "  group: \"x:y\"\n", { 4, 10, "group: invalid name" });
    CHECK_STRING(WS "  environment: {1X: a}\n", { 4, 17, "invalid variable name '1X'" });
    CHECK_STRING(WS "  environment: {A: b, LAYOUTD_STORE_DIR: /x}\n",
                 { 4, 23, "'LAYOUTD_STORE_DIR' is set by layoutd itself" });
    {
        /* A daemon's own LAYOUTD_ knobs are not the agent's. */
        Layout *el = NULL;
        LayoutErrors errs = {};
        const char *y = WS "  environment: {LAYOUTD_WSFS_TRACE: \"1\"}\n";
        assert_int_equal(layout_parse_string(y, strlen(y), "inline.yaml", &el, &errs), 0);
        assert_non_null(el);
        assert_true(strv_contains((const char *const *) el->workspace.environment, "LAYOUTD_WSFS_TRACE=1"));
        layout_free(el);
        layout_errors_clear(&errs);
    }
    CHECK_STRING(WS "  environment: {X: [a]}\n", { 4, 20, "X: expected a string, got a list" });
    CHECK_STRING(WS "  dir_mode: \"0789\"\n", { 4, 13, "expected an octal mode" });
    CHECK_STRING(WS "  dir_mode: \"17777\"\n", { 4, 13, "expected an octal mode" });
    CHECK_STRING(WS "  restart: on_failure\n", { 4, 12, "did you mean 'on-failure'?" });
    CHECK_STRING(WS "  backoff: {initial: 99ms}\n", { 4, 22, "backoff.initial: must be between 100ms and 1d" });
    CHECK_STRING(WS "  backoff: {max: 500ms}\n", { 4, 18, "initial (the default 1s) must not be more than max" });
    CHECK_STRING(WS "  backoff: {reset_after: 30}\n", { 4, 26, "'30' needs a unit" });
    CHECK_STRING(WS "  crash_loop: {deaths: 0}\n", { 4, 24, "crash_loop.deaths: must be between 1 and 1000" });
    CHECK_STRING(WS "  crash_loop: {interval: 5 parsecs}\n", { 4, 26, "invalid duration '5 parsecs'" });
    CHECK_STRING(WS "  ready_timeout: 0\n", { 4, 18, "ready_timeout: must be between 1ms and 1h" });
    CHECK_STRING(WS "  stop_timeout: 2h\n", { 4, 17, "stop_timeout: must be between 1ms and 1h" });
    CHECK_STRING(WS "  hang_timeout: 0\n  restart_on_hang: true\n", { 5, 20, "needs a hang_timeout other than 0" });
    CHECK_STRING(WS "  workspaces: [{id: a, tennant: b}]\n", { 4, 24, "did you mean 'tenant'?" });
    CHECK_STRING(WS "  workspaces: [a]\n", { 4, 16, "a static workspace must be a mapping" });
    CHECK_STRING(WS "  comand: [/bin/x]\n", { 4, 3, "did you mean 'command'?" });
    l = parse_ok(WS "  backoff: {initial: 2min}\n  hang_timeout: 0\n  dir_mode: 750\n");
    assert_int_equal(l->workspace.backoff_max, 120 * USEC_PER_SEC); /* raised to initial */
    assert_int_equal(l->workspace.hang_timeout, 0);
    assert_int_equal(l->workspace.dir_mode, 0750);
    layout_free(l);

#define API "version: 1\npools: {state: {}}\napi:\n"
    CHECK_STRING(API "  socket: /run/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.sock\n",
                 { 4, 11, "at most 107 bytes" });
    CHECK_STRING(API "  socket_mode: rw\n", { 4, 16, "expected an octal mode" });
    CHECK_STRING(API "  flush_probe_interval: 10ms\n", { 4, 25, "must be 0 (off) or at least 1s" });
    CHECK_STRING(API "  max_connections: 0\n", { 4, 20, "must be between 1 and 65536" });
    CHECK_STRING(API "  max_body: 100\n", { 4, 13, "must be between 1KiB and 64MiB" });
    CHECK_STRING(API "  request_timeout: forever\n", { 4, 20, "invalid duration 'forever'" });
    CHECK_STRING(API "  sockets: /x\n", { 4, 3, "did you mean 'socket'?" });
    CHECK_STRING(API "  readonly_socket: run/ro.sock\n", { 4, 20, "expected an absolute path" });
    CHECK_STRING(API "  readonly_socket: /run/layoutd/api.sock\n", { 4, 20, "must not be the same path as socket" });
    CHECK_STRING(API "  socket: /run/x.sock\n  readonly_socket: /run/x.sock\n", { 5, 20, "must not be the same path" });
    CHECK_STRING(API "  readonly_socket_mode: 999\n", { 4, 25, "octal mode" });
    l = parse_ok(API "  readonly_socket: /run/layoutd/api-ro.sock\n  readonly_socket_mode: \"0640\"\n");
    assert_string_equal(l->api.readonly_socket_path, "/run/layoutd/api-ro.sock");
    assert_int_equal(l->api.readonly_socket_mode, 0640);
    layout_free(l);

    CHECK_STRING("version: 1\nroot: var\npools: {state: {}}\n", { 2, 7, "root: expected an absolute path" });
    /* Never a system tree, nor a directory others use (the part that
     * needs the host, symlinks, is engine_check_host's). */
    CHECK_STRING("version: 1\nroot: /\npools: {state: {}}\n", { 2, 7, "root: / cannot be layoutd's root" });
    CHECK_STRING("version: 1\nroot: /etc\npools: {state: {}}\n", { 2, 7, "it is a system directory" });
    CHECK_STRING("version: 1\nroot: /usr/lib/x\npools: {state: {}}\n", { 2, 7, "it is a system directory" });
    CHECK_STRING("version: 1\nroot: /var/lib/\npools: {state: {}}\n", { 2, 7, "a directory others use too" });
    CHECK_STRING(WS "  mount_root: /home\n", { 4, 15, "workspaces cannot be mounted below /home" });
    CHECK_STRING(WS "  dir_mode: \"7777\"\n", { 4, 13, "setuid, setgid or sticky" });
    CHECK_STRING(WS "  dir_mode: \"2750\"\n", { 4, 13, "setuid, setgid or sticky" });
    CHECK_STRING(WS "  dir_mode: \"0777\"\n", { 4, 13, "world-writable" });
    CHECK_STRING(WS "  workspaces: [{id: state-0}]\n", { 4, 21, "'state-0' is the name of a volume" });
    l = parse_ok("version: 1\nroot: /var/lib/layoutd-2\npools: {state: {}}\nworkspace:\n"
                 "  workspaces: [{id: state-x}, {id: content}]\n");
    layout_free(l);
    assert_true(layout_name_is_volume("state-0") && layout_name_is_volume("content-12"));
    assert_false(layout_name_is_volume("state-") || layout_name_is_volume("state-0a") ||
                 layout_name_is_volume("states-0") || layout_name_is_volume("ws-1"));
    CHECK_STRING("pools: {state: {}}\n", { 1, 1, "missing required key 'version'" });
    CHECK_STRING("version: 1\n", { 1, 1, "missing required key 'pools'" });
    CHECK_STRING("version: 1\npools: {state: {}, cache: {}}\n", { 2, 20, "unknown key 'cache' in pools" });
    CHECK_STRING("version: 1\npools: {state: {}}\nworkspaces: {}\n", { 3, 1, "did you mean 'workspace'?" });
    CHECK_STRING("version: 1\npools: {state: {}}\nzzz: 1\n", { 3, 1, "expected one of: version, root, pools" });
}

/* All errors are reported, in file order, not only the first. */
/* capacity:, growth:, gc: and the content pool that the command names. */
static void test_capacity(void **state) {
    /* defaults */
    _cleanup_(layout_freep) Layout *d = parse_ok("version: 1\npools:\n  state: {}\n  content: {}\n");
    const Pool *s = layout_pool(d, POOL_STATE), *c = layout_pool(d, POOL_CONTENT);
    assert_int_equal(s->capacity.warn, 80);
    assert_int_equal(s->capacity.critical, 95);
    assert_false(s->growth.enabled);
    assert_false(s->gc.enabled); /* gc is the content pool's */
    /* the default command is the reference daemon: its sweep is on */
    assert_true(c->gc.enabled);
    static const char *const gc_argv[] = { "/usr/libexec/layoutd/layoutd-wsfs", "gc", NULL };
    assert_true(strv_equal((const char *const *) c->gc.command, gc_argv));
    assert_int_equal(c->gc.interval, 3600 * USEC_PER_SEC);
    assert_int_equal(c->gc.grace, 3600 * USEC_PER_SEC);
    assert_int_equal(c->gc.free_threshold, 20);

    Layout *l = parse_ok("version: 1\npools:\n"
                         "  state:\n    volume_size: 256M\n"
                         "    capacity: {warn: 70%, critical: 90%}\n"
                         "    growth: {threshold: 75%, step: 512M, max_size: 4G, host_reserve: 10%}\n"
                         "  content:\n    volume_size: 512M\n    growth: {}\n"
                         "    gc: {interval: 10min, grace: 2min, free_threshold: 0%}\n");
    s = layout_pool(l, POOL_STATE);
    c = layout_pool(l, POOL_CONTENT);
    assert_int_equal(s->capacity.warn, 70);
    assert_int_equal(s->capacity.critical, 90);
    assert_true(s->growth.enabled);
    assert_int_equal(s->growth.threshold, 75);
    assert_int_equal(s->growth.step, 512 * MIB);
    assert_int_equal(s->growth.max_size, 4 * GIB);
    assert_int_equal(s->growth.host_reserve, 0);
    assert_int_equal(s->growth.host_reserve_percent, 10);
    assert_true(c->growth.enabled);
    assert_int_equal(c->growth.threshold, 80);
    assert_int_equal(c->growth.step, 0); /* double */
    assert_int_equal(c->growth.max_size, 16 * 512 * MIB);
    assert_int_equal(c->growth.host_reserve_percent, 5);
    assert_true(c->gc.enabled);
    assert_int_equal(c->gc.interval, 600 * USEC_PER_SEC);
    assert_int_equal(c->gc.grace, 120 * USEC_PER_SEC);
    assert_int_equal(c->gc.free_threshold, 0);
    layout_free(l);

    /* another daemon: no sweep unless one is named */
    l = parse_ok("version: 1\npools:\n  state: {}\n  content:\n    growth: {host_reserve: 2G}\n"
                 "workspace:\n  command: [/usr/bin/other, \"{content_dirs}\", \"{mountpoint}\"]\n");
    assert_false(layout_pool(l, POOL_CONTENT)->gc.enabled);
    assert_int_equal(layout_pool(l, POOL_CONTENT)->growth.host_reserve, 2 * GIB);
    assert_int_equal(layout_pool(l, POOL_CONTENT)->growth.host_reserve_percent, 0);
    layout_free(l);
    l = parse_ok("version: 1\npools:\n  state: {}\n  content:\n    gc: {command: [/usr/bin/sweep, --now]}\n"
                 "workspace:\n  command: [/usr/bin/other, \"{mountpoint}\"]\n");
    assert_true(layout_pool(l, POOL_CONTENT)->gc.enabled);
    assert_string_equal(layout_pool(l, POOL_CONTENT)->gc.command[1], "--now");
    layout_free(l);
    l = parse_ok("version: 1\npools:\n  state: {}\n  content: {gc: false}\n");
    assert_false(layout_pool(l, POOL_CONTENT)->gc.enabled);
    layout_free(l);

    /* no content pool: the built-in command runs the daemon without one */
    l = parse_ok("version: 1\npools:\n  state: {}\n");
    static const char *const argv[] = { "/usr/libexec/layoutd/layoutd-wsfs", "--state", "{state_dir}",
                                        "{mountpoint}", NULL };
    assert_true(strv_equal((const char *const *) l->workspace.command, argv));
    layout_free(l);

#define ST "version: 1\npools:\n  state:\n"
    CHECK_STRING(ST "    capacity: {warn: 80}\n", { 4, 22, "expected a whole percentage such as 80%" });
    CHECK_STRING(ST "    capacity: {warn: 0.8}\n", { 4, 22, "expected a whole percentage" });
    CHECK_STRING(ST "    capacity: {critical: 101%}\n", { 4, 26, "between 1% and 100%" });
    CHECK_STRING(ST "    capacity: {warn: 90%, critical: 85%}\n", { 4, 22, "must be below capacity.critical" });
    CHECK_STRING(ST "    capacity: {warning: 90%}\n", { 4, 16, "expected one of: warn, critical" });
    CHECK_STRING(ST "    growth: true\n", { 4, 13, "does not say how far" });
    CHECK_STRING(ST "    growth: {step: 3}\n", { 4, 20, "positive multiple of 4 KiB" });
    CHECK_STRING(ST "    growth: {step: triple}\n", { 4, 20, "invalid size 'triple'" });
    CHECK_STRING(ST "    volume_size: 1G\n    growth: {max_size: 1G}\n", { 5, 24, "must be more than volume_size" });
    CHECK_STRING(ST "    growth: {threshold: 100%}\n", { 4, 25, "between 1% and 99%" });
    CHECK_STRING(ST "    growth: {host_reserve: 95%}\n", { 4, 28, "between 0% and 90%" });
    CHECK_STRING(ST "    backend: dir\n    growth: {}\n", { 5, 13, "only loop-ext4, loop-xfs, loop-btrfs volumes grow" });
    CHECK_STRING(ST "    gc: {}\n", { 4, 5, "'gc' applies to the content pool only" });
    CHECK_STRING("version: 1\npools:\n  state: {}\n  content:\n    backend: vdo-xfs\n    growth: {}\n",
                 { 6, 13, "grows when volume_size is raised and the layout reloaded" });
    CHECK_STRING("version: 1\npools:\n  state: {}\n  content:\n    gc: {grace: 10s}\n",
                 { 5, 17, "gc.grace: must be between 1min and" });
    CHECK_STRING("version: 1\npools:\n  state: {}\n  content:\n    gc: {command: sweep}\n",
                 { 5, 19, "gc.command: expected a list" });
    CHECK_STRING("version: 1\npools:\n  state: {}\n  content:\n    gc: {command: [sweep]}\n",
                 { 5, 20, "gc.command[0]: expected an absolute path" });
    CHECK_STRING("version: 1\npools:\n  state: {}\n  content:\n    gc: {interval: 1h}\n"
                 "workspace:\n  command: [/usr/bin/other, \"{mountpoint}\"]\n",
                 { 5, 9, "gc: needs a command: the workspaces run /usr/bin/other" });
    /* a command that names a content pool the layout does not have */
    CHECK_STRING(ST "    backend: dir\nworkspace:\n  command: [/usr/bin/d, --content, \"{content_dirs}\", \"{mountpoint}\"]\n",
                 { 6, 36, "'{content_dirs}' names the content pool, but the layout declares none" });
    CHECK_STRING(ST "    backend: dir\nworkspace:\n  command: [/usr/bin/d, \"--shards={shards}\"]\n",
                 { 6, 25, "'{shards}' names the content pool" });
#undef ST
}

static void test_all_errors(void **state) {
    static const char y[] = "version: 1\n"
                            "api: {max_connections: 0}\n"
                            "pools:\n"
                            "  state:\n"
                            "    volume_size: 12 parsecs\n"
                            "    workspace_per_volume: 3\n"
                            "    compression: true\n"
                            "    max_volumes: 2\n"
                            "    max_volumes: 3\n";
    CHECK_STRING(y,
                 { 2, 24, "max_connections" },
                 { 5, 18, "12 parsecs" },
                 { 6, 5, "workspaces_per_volume" },
                 { 7, 5, "compression" },
                 { 9, 5, "duplicate key 'max_volumes'" });

    /* The error list is bounded. */
    char *big = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&big, &size);
    assert_non_null(f);
    fputs("version: 1\npools: {state: {}}\n", f);
    for (int i = 0; i < 500; i++)
        fprintf(f, "unknown%d: 1\n", i);
    assert_int_equal(fclose(f), 0);
    LayoutErrors errors = {};
    Layout *l = NULL;
    assert_int_equal(layout_parse_string(big, size, "big.yaml", &l, &errors), -EINVAL);
    assert_int_equal(errors.n, 101);
    assert_string_equal(errors.items[100].message, "too many errors, not reporting the rest");
    layout_errors_clear(&errors);
    free(big);

    /* errors may be NULL: the result is still -EINVAL. */
    assert_int_equal(layout_parse_string(y, strlen(y), "x", &l, NULL), -EINVAL);
    assert_null(l);
}

static void test_deep_nesting(void **state) {
    char buf[512];
    size_t o = 0;
    o += (size_t) snprintf(buf, sizeof buf, "version: 1\npools: {state: {}}\nx: ");
    for (int i = 0; i < 100; i++)
        buf[o++] = '[';
    buf[o] = 0;
    LayoutErrors errors = {};
    Layout *l = NULL;
    assert_int_equal(layout_parse_string(buf, o, "deep.yaml", &l, &errors), -EINVAL);
    assert_int_equal(errors.n, 1);
    assert_non_null(strstr(errors.items[0].message, "nesting deeper than"));
    assert_int_equal(errors.items[0].line, 3);
    layout_errors_clear(&errors);
}

static void test_limits(void **state) {
    LayoutErrors errors = {};
    Layout *l = NULL;

    /* /dev/zero never ends: bounded read, one error. */
    assert_int_equal(layout_parse_file("/dev/zero", &l, &errors), -EFBIG);
    assert_int_equal(errors.n, 1);
    assert_non_null(strstr(errors.items[0].message, "larger than 1024 KiB"));
    layout_errors_clear(&errors);
    assert_int_equal(layout_parse_file("/", &l, &errors), -EISDIR);
    assert_int_equal(errors.n, 1);
    layout_errors_clear(&errors);

    /* A mapping with very many keys is refused as a whole. */
    char *big = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&big, &size);
    assert_non_null(f);
    fputs("version: 1\npools: {state: {}}\nworkspace:\n  environment:\n", f);
    for (int i = 0; i < 2000; i++)
        fprintf(f, "    V%d: x\n", i);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(layout_parse_string(big, size, "many.yaml", &l, &errors), -EINVAL);
    assert_int_equal(errors.n, 1);
    assert_int_equal(errors.items[0].line, 5);
    assert_int_equal(errors.items[0].column, 5);
    assert_non_null(strstr(errors.items[0].message, "environment has 2000 keys"));
    layout_errors_clear(&errors);
    free(big);

    /* A long list likewise. */
    f = open_memstream(&big, &size);
    assert_non_null(f);
    fputs("version: 1\npools:\n  state:\n    mkfs_options: [", f);
    for (int i = 0; i < 1500; i++)
        fprintf(f, "%s-q", i ? ", " : "");
    fputs("]\n", f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(layout_parse_string(big, size, "long.yaml", &l, &errors), -EINVAL);
    assert_int_equal(errors.n, 1);
    assert_non_null(strstr(errors.items[0].message, "mkfs_options: 1500 items"));
    layout_errors_clear(&errors);
    free(big);
}

static void test_parse_file_missing(void **state) {
    LayoutErrors errors = {};
    Layout *l = NULL;
    assert_int_equal(layout_parse_file(FIXTURES "does-not-exist.yaml", &l, &errors), -ENOENT);
    assert_null(l);
    assert_int_equal(errors.n, 1);
    assert_int_equal(errors.items[0].line, 0);
    assert_non_null(strstr(errors.items[0].message, "cannot read the layout"));
    layout_errors_clear(&errors);
}

/* ---- values ---- */

static void test_parse_size(void **state) {
    static const struct {
        const char *s;
        uint64_t v;
    } ok[] = {
        { "0", 0 },           { "4096", 4096 },       { "4096B", 4096 },        { "1K", KIB },
        { "1KiB", KIB },      { "512MiB", 512 * MIB }, { "512 MiB", 512 * MIB }, { "12G", 12 * GIB },
        { "3GiB", 3 * GIB },  { "2T", 2 * TIB },      { "2TiB", 2 * TIB },      { "16777215TiB", 16777215ULL * TIB },
        { "18446744073709551615", UINT64_MAX },
    };
    for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
        uint64_t v = 1;
        assert_int_equal(layout_parse_size(ok[i].s, &v), 0);
        assert_int_equal(v, ok[i].v);
    }
    static const char *const bad[] = { "", "G", "12 parsecs", "1.5G", "1GB", "1MB", "1kb", "-1", " 1", "1 ", "1g",
                                       "0x10", "1 G B", NULL };
    for (size_t i = 0; bad[i]; i++) {
        uint64_t v = 7;
        assert_int_equal(layout_parse_size(bad[i], &v), -EINVAL);
        assert_int_equal(v, 7);
    }
    uint64_t v;
    assert_int_equal(layout_parse_size("18446744073709551616", &v), -ERANGE);
    assert_int_equal(layout_parse_size("16777216TiB", &v), -ERANGE);
    assert_int_equal(layout_parse_size(NULL, &v), -EINVAL);
}

static void test_parse_duration(void **state) {
    static const struct {
        const char *s;
        usec_t v;
    } ok[] = {
        { "0", 0 },
        { "500ms", 500 * USEC_PER_MSEC },
        { "30s", 30 * USEC_PER_SEC },
        { "30sec", 30 * USEC_PER_SEC },
        { "5min", 300 * USEC_PER_SEC },
        { "1h", 3600 * USEC_PER_SEC },
        { "1d", 86400 * USEC_PER_SEC },
        { "1w", 7 * 86400 * USEC_PER_SEC },
        { "250us", 250 },
        { "1h 30min", 5400 * USEC_PER_SEC },
        { "1min30s", 90 * USEC_PER_SEC },
        { "0s", 0 },
    };
    for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
        usec_t v = 1;
        assert_int_equal(layout_parse_duration(ok[i].s, &v), 0);
        assert_int_equal(v, ok[i].v);
    }
    static const char *const bad[] = { "", "30", "5m", "1.5s", "-1s", "s", "1 parsec", "1y", " ", "1s x", NULL };
    for (size_t i = 0; bad[i]; i++) {
        usec_t v = 7;
        assert_int_equal(layout_parse_duration(bad[i], &v), -EINVAL);
        assert_int_equal(v, 7);
    }
    usec_t v;
    assert_int_equal(layout_parse_duration("99999999999999999999d", &v), -ERANGE);
    assert_int_equal(layout_parse_duration("999999999999d", &v), -ERANGE);
}

static void test_format(void **state) {
    static const struct {
        uint64_t v;
        const char *s;
    } sizes[] = { { 0, "0" }, { 1, "1" }, { 4096, "4KiB" }, { 256 * MIB, "256MiB" }, { 3 * GIB, "3GiB" },
                  { 2 * TIB, "2TiB" }, { 1000001, "1000001" }, { GIB + 512 * MIB, "1536MiB" } };
    for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
        _cleanup_free_ char *s = NULL;
        uint64_t back;
        assert_int_equal(layout_format_size(sizes[i].v, &s), 0);
        assert_string_equal(s, sizes[i].s);
        assert_int_equal(layout_parse_size(s, &back), 0);
        assert_int_equal(back, sizes[i].v);
    }
    static const struct {
        usec_t v;
        const char *s;
    } durs[] = { { 0, "0" }, { 1, "1us" }, { 1500, "1500us" }, { 500 * USEC_PER_MSEC, "500ms" },
                 { 90 * USEC_PER_SEC, "90s" }, { 120 * USEC_PER_SEC, "2min" }, { 86400 * USEC_PER_SEC, "1d" } };
    for (size_t i = 0; i < ELEMENTSOF(durs); i++) {
        _cleanup_free_ char *s = NULL;
        usec_t back;
        assert_int_equal(layout_format_duration(durs[i].v, &s), 0);
        assert_string_equal(s, durs[i].s);
        assert_int_equal(layout_parse_duration(s, &back), 0);
        assert_int_equal(back, durs[i].v);
    }
}

/* ---- output ---- */

static void roundtrip_layout(const Layout *a) {
    _cleanup_free_ char *yaml = NULL, *ja = NULL, *jb = NULL, *ha = NULL, *hb = NULL;
    assert_int_equal(layout_to_yaml_string(a, &yaml), 0);
    /* The YAML output is itself a valid layout describing the same thing. */
    _cleanup_(layout_freep) Layout *b = parse_ok(yaml);
    assert_int_equal(layout_to_json_string(a, &ja), 0);
    assert_int_equal(layout_to_json_string(b, &jb), 0);
    assert_string_equal(ja, jb);
    assert_int_equal(layout_hash(a, &ha), 0);
    assert_int_equal(layout_hash(b, &hb), 0);
    assert_string_equal(ha, hb);
    assert_int_equal(strlen(ha), 64);
}

static void roundtrip_one(const char *path) {
    _cleanup_(layout_freep) Layout *a = parse_ok_file(path);
    roundtrip_layout(a);
}

static void test_roundtrip(void **state) {
    /* btrfs: the output leaves out the inode reserve it would refuse. */
    _cleanup_(layout_freep) Layout *b = parse_ok("version: 1\npools:\n  state: {backend: loop-btrfs}\n"
                                                 "  content: {backend: loop-btrfs}\n");
    roundtrip_layout(b);
    roundtrip_one(LAYOUTS "default.yaml");
    roundtrip_one(LAYOUTS "ext4-dio.yaml");
    roundtrip_one(LAYOUTS "xfs-vdo.yaml");
    roundtrip_one(LAYOUTS "dev-dir.yaml");
    roundtrip_one(FIXTURES "valid-full.yaml");
    roundtrip_one(FIXTURES "minimal.yaml");
}

static void test_json(void **state) {
    _cleanup_(layout_freep) Layout *l = parse_ok_file(LAYOUTS "default.yaml");
    _cleanup_free_ char *s = NULL;
    assert_int_equal(layout_to_json_string(l, &s), 0);
    json_object *j = json_tokener_parse(s);
    assert_non_null(j);
    json_object *pools, *state_pool, *v;
    assert_true(json_object_object_get_ex(j, "version", &v));
    assert_int_equal(json_object_get_int(v), 1);
    assert_true(json_object_object_get_ex(j, "root", &v));
    assert_string_equal(json_object_get_string(v), "/var/lib/layoutd");
    assert_true(json_object_object_get_ex(j, "pools", &pools));
    assert_true(json_object_object_get_ex(pools, "state", &state_pool));
    assert_true(json_object_object_get_ex(state_pool, "volume_size", &v));
    assert_int_equal(json_object_get_int64(v), (int64_t) (512 * MIB));
    assert_true(json_object_object_get_ex(state_pool, "backend", &v));
    assert_string_equal(json_object_get_string(v), "loop-xfs");
    json_object *ws, *bo;
    assert_true(json_object_object_get_ex(j, "workspace", &ws));
    assert_true(json_object_object_get_ex(ws, "backoff", &bo));
    assert_true(json_object_object_get_ex(bo, "initial", &v));
    assert_int_equal(json_object_get_int64(v), (int64_t) USEC_PER_SEC);
    assert_false(json_object_object_get_ex(j, "source", &v)); /* the hash must not depend on the path */
    json_object_put(j);

    /* A different layout has a different hash; the same one the same. */
    _cleanup_(layout_freep) Layout *m = parse_ok_file(LAYOUTS "ext4-dio.yaml");
    _cleanup_free_ char *h1 = NULL, *h2 = NULL, *h3 = NULL;
    assert_int_equal(layout_hash(l, &h1), 0);
    assert_int_equal(layout_hash(m, &h2), 0);
    assert_string_not_equal(h1, h2);
    assert_int_equal(layout_set_root(l, "/var/lib/layoutd"), 0);
    assert_int_equal(layout_hash(l, &h3), 0);
    assert_string_equal(h1, h3);
}

/* ---- paths, names, enums ---- */

static void test_paths(void **state) {
    _cleanup_(layout_freep) Layout *l = parse_ok_file(LAYOUTS "default.yaml");
    _cleanup_free_ char *name = NULL, *img = NULL, *mnt = NULL, *rec = NULL, *img2 = NULL;
    assert_int_equal(layout_volume_name(POOL_STATE, 3, &name), 0);
    assert_string_equal(name, "state-3");
    free(name);
    assert_int_equal(layout_volume_name(POOL_CONTENT, 0, &name), 0);
    assert_string_equal(name, "content-0");
    assert_int_equal(layout_volume_name(_POOL_ROLE_MAX, 0, &img), -EINVAL);
    assert_int_equal(layout_backing_path(l, "state-0", &img), 0);
    assert_string_equal(img, "/var/lib/layoutd/images/state-0.img");
    assert_int_equal(layout_mount_path(l, "state-0", &mnt), 0);
    assert_string_equal(mnt, "/var/lib/layoutd/volumes/state-0");
    assert_int_equal(layout_record_path(l, &rec), 0);
    assert_string_equal(rec, "/var/lib/layoutd/layoutd-state.json");

    /* set_root moves the defaulted mount root along, not an explicit one. */
    assert_int_equal(layout_set_root(l, "relative"), -EINVAL);
    assert_int_equal(layout_set_root(l, "/tmp/layoutd-x/"), 0);
    assert_string_equal(l->root, "/tmp/layoutd-x");
    assert_string_equal(l->workspace.mount_root, "/tmp/layoutd-x/workspaces");
    assert_int_equal(layout_backing_path(l, "content-1", &img2), 0);
    assert_string_equal(img2, "/tmp/layoutd-x/images/content-1.img");

    _cleanup_(layout_freep) Layout *f = parse_ok_file(FIXTURES "valid-full.yaml");
    assert_int_equal(layout_set_root(f, "/"), 0);
    assert_string_equal(f->workspace.mount_root, "/srv/ws");
    _cleanup_free_ char *r2 = NULL;
    assert_int_equal(layout_record_path(f, &r2), 0);
    assert_string_equal(r2, "/layoutd-state.json");
}

static void test_enums(void **state) {
    for (int i = 0; i < _BACKEND_MAX; i++)
        assert_int_equal(backend_from_string(backend_to_string(i)), i);
    for (int i = 0; i < _POOL_ROLE_MAX; i++)
        assert_int_equal(pool_role_from_string(pool_role_to_string(i)), i);
    for (int i = 0; i < _PLACEMENT_POLICY_MAX; i++)
        assert_int_equal(placement_policy_from_string(placement_policy_to_string(i)), i);
    for (int i = 0; i < _RESTART_POLICY_MAX; i++)
        assert_int_equal(restart_policy_from_string(restart_policy_to_string(i)), i);
    assert_string_equal(backend_to_string(BACKEND_VDO_XFS), "vdo-xfs");
    assert_string_equal(restart_policy_to_string(RESTART_ON_FAILURE), "on-failure");
    assert_int_equal(backend_from_string("ext4"), _BACKEND_INVALID);
    assert_int_equal(backend_from_string(NULL), _BACKEND_INVALID);
    assert_null(backend_to_string(_BACKEND_MAX));
    assert_null(pool_role_to_string(-1));
}

/* ---- layout directory ---- */

static void write_file(const char *dir, const char *name, const char *content) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "we");
    assert_non_null(f);
    fputs(content, f);
    assert_int_equal(fclose(f), 0);
}

static void test_find_in_dir(void **state) {
    char dir[] = "/tmp/layoutd-test-layout-dir.XXXXXX";
    assert_non_null(mkdtemp(dir));
    LayoutErrors errors = {};
    char *path = NULL;

    assert_int_equal(layout_find_in_dir(dir, &path, &errors), -ENOENT);
    assert_null(path);
    assert_int_equal(errors.n, 1);
    layout_errors_clear(&errors);

    write_file(dir, "README", "not a layout\n");
    write_file(dir, ".hidden.yaml", "editor droppings\n");
    write_file(dir, "host.yaml.bak", "backup\n");
    write_file(dir, "host.yaml", "version: 1\npools: {state: {}}\n");
    assert_int_equal(layout_find_in_dir(dir, &path, &errors), 0);
    assert_int_equal(errors.n, 0);
    char want[512];
    snprintf(want, sizeof want, "%s/host.yaml", dir);
    assert_string_equal(path, want);
    free(path);
    path = NULL;

    write_file(dir, "another.yaml", "version: 1\npools: {state: {}}\n");
    assert_int_equal(layout_find_in_dir(dir, &path, &errors), -ENOTUNIQ);
    assert_null(path);
    assert_int_equal(errors.n, 2);
    assert_non_null(strstr(errors.items[0].file, "another.yaml")); /* sorted */
    assert_non_null(strstr(errors.items[1].file, "host.yaml"));
    assert_non_null(strstr(errors.items[0].message, "exactly one is allowed"));
    layout_errors_clear(&errors);

    static const char *const names[] = { "README", ".hidden.yaml", "host.yaml.bak", "host.yaml", "another.yaml" };
    for (size_t i = 0; i < ELEMENTSOF(names); i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        assert_int_equal(unlink(p), 0);
    }
    assert_int_equal(rmdir(dir), 0);

    assert_int_equal(layout_find_in_dir("/nonexistent-layoutd-dir", &path, &errors), -ENOENT);
    assert_int_equal(errors.n, 1);
    layout_errors_clear(&errors);
}

/* workspace.package_store: "auto" (the default) is on where the state
 * pool's filesystem shares extents on copy, off elsewhere; true and false
 * win over the backend; anything else is an error at its position. */
static void test_package_store(void **state) {
    static const struct {
        const char *backend, *value;
        bool on, is_auto;
    } cases[] = {
        { "loop-xfs", NULL, true, true },     { "loop-ext4", NULL, false, true },
        { "loop-btrfs", NULL, true, true },   { "dir", NULL, false, true },
        { "loop-xfs", "auto", true, true },   { "loop-ext4", "auto", false, true },
        { "loop-xfs", "false", false, false }, { "loop-ext4", "true", true, false },
        { "vdo-xfs", NULL, true, true },
        { "loop-xfs, mkfs_options: [-m, reflink=0]", NULL, false, true },
        { "loop-xfs, mkfs_options: [-m, \"crc=0,reflink=1\"]", NULL, false, true },
        { "loop-xfs, mkfs_options: [-m, reflink=0]", "true", true, false },
    };
    for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
        _cleanup_free_ char *yaml = NULL;
        assert_true(asprintf(&yaml, "version: 1\npools:\n  state: {backend: %s%s}\n%s%s%s", cases[i].backend,
                             streq(cases[i].backend, "dir") ? "" : ", volume_size: 1GiB",
                             cases[i].value ? "workspace:\n  package_store: " : "", cases[i].value ?: "",
                             cases[i].value ? "\n" : "") >= 0);
        Layout *l = parse_ok(yaml);
        if (l->workspace.package_store != cases[i].on || l->workspace.package_store_auto != cases[i].is_auto)
            fprintf(stderr, "%s: package_store %d auto %d\n", yaml, l->workspace.package_store,
                    l->workspace.package_store_auto);
        assert_int_equal(l->workspace.package_store, cases[i].on);
        assert_int_equal(l->workspace.package_store_auto, cases[i].is_auto);
        layout_free(l);
    }
    CHECK_STRING("version: 1\npools:\n  state: {backend: loop-xfs}\nworkspace:\n  package_store: maybe\n",
                 { 5, 18, "package_store: expected auto, true or false, got 'maybe'" });
    CHECK_STRING("version: 1\npools:\n  state: {backend: loop-xfs}\nworkspace:\n  package_store: [auto]\n",
                 { 5, 18, "package_store" });
    CHECK_STRING("version: 1\npools:\n  state: {backend: loop-xfs}\nworkspace:\n  package_store: on\n",
                 { 5, 18, "write true or false" });
}

/* Where the file gives each value: for the errors found after the parse
 * (engine_check_host), which name file:line:column as the parser's do. */
/* api.metrics_listen's addresses: a port alone is loopback. */
static void test_parse_listen(void **state) {
    struct sockaddr_storage ss;
    socklen_t len;
    assert_int_equal(layout_parse_listen("9464", &ss, &len), 0);
    assert_int_equal(ss.ss_family, AF_INET);
    assert_int_equal(((struct sockaddr_in *) &ss)->sin_addr.s_addr, htonl(INADDR_LOOPBACK));
    assert_int_equal(ntohs(((struct sockaddr_in *) &ss)->sin_port), 9464);
    assert_int_equal(layout_parse_listen("0.0.0.0:80", &ss, &len), 0);
    assert_int_equal(((struct sockaddr_in *) &ss)->sin_addr.s_addr, htonl(INADDR_ANY));
    assert_int_equal(layout_parse_listen("[::1]:9464", &ss, &len), 0);
    assert_int_equal(ss.ss_family, AF_INET6);
    assert_int_equal(len, sizeof(struct sockaddr_in6));
    const char *bad[] = { "", "0", "65536", "localhost:9464", "127.0.0.1:", "::1:9464", "[::1]", "[::1]9464",
                          "1.2.3.4:-1", "1.2.3.4:9x", "[zz]:1", "1.2.3:4" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(layout_parse_listen(bad[i], &ss, &len), -EINVAL);
}

static void test_key_positions(void **state) {
    _cleanup_(layout_freep) Layout *l = parse_ok("version: 1\n"
                                                 "root: /var/lib/layoutd-x\n"
                                                 "pools:\n"
                                                 "  state: {volume_size: 1G}\n"
                                                 "workspace:\n"
                                                 "  user: \"nobody\"\n"
                                                 "  command: [/usr/bin/d, \"{mountpoint}\"]\n"
                                                 "  workspaces:\n"
                                                 "    - {id: ws-1}\n");
    unsigned line = 0, column = 0;
    assert_true(layout_key_position(l, "root", &line, &column));
    assert_int_equal(line, 2);
    assert_int_equal(column, 7);
    assert_true(layout_key_position(l, "workspace.user", &line, &column));
    assert_int_equal(line, 6);
    assert_int_equal(column, 9);
    assert_true(layout_key_position(l, "pools.state.volume_size", &line, &column));
    assert_int_equal(line, 4);
    assert_int_equal(column, 24);
    assert_true(layout_key_position(l, "workspace.command[1]", &line, &column));
    assert_int_equal(line, 7);
    assert_int_equal(column, 25);
    assert_true(layout_key_position(l, "workspace.workspaces[0].id", &line, &column));
    assert_int_equal(line, 9);
    assert_int_equal(column, 12);
    assert_true(layout_key_position(l, "workspace", NULL, NULL));
    /* Defaults are not in the file; neither is a prefix of a key. */
    line = column = 99;
    assert_false(layout_key_position(l, "workspace.group", &line, &column));
    assert_false(layout_key_position(l, "workspace.mount_root", &line, &column));
    assert_false(layout_key_position(l, "workspace.us", &line, &column));
    assert_int_equal(line, 99);
    /* --root: the value no longer comes from the file. */
    assert_int_equal(layout_set_root(l, "/srv/layoutd"), 0);
    assert_false(layout_key_position(l, "root", NULL, NULL));
    assert_true(layout_key_position(l, "workspace.user", NULL, NULL));
    assert_false(layout_key_position(NULL, "root", NULL, NULL));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_full),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_content_and_vdo_defaults),
        cmocka_unit_test(test_shipped_layouts),
        cmocka_unit_test(test_misspelled_key),
        cmocka_unit_test(test_size_parsecs),
        cmocka_unit_test(test_vdo_key_on_ext4),
        cmocka_unit_test(test_duplicate_key),
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_alias),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_non_utf8),
        cmocka_unit_test(test_huge_numbers),
        cmocka_unit_test(test_negative_numbers),
        cmocka_unit_test(test_quota),
        cmocka_unit_test(test_cross_field),
        cmocka_unit_test(test_command),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_capacity),
        cmocka_unit_test(test_all_errors),
        cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_parse_file_missing),
        cmocka_unit_test(test_parse_size),
        cmocka_unit_test(test_parse_duration),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_enums),
        cmocka_unit_test(test_find_in_dir),
        cmocka_unit_test(test_package_store),
        cmocka_unit_test(test_key_positions),
        cmocka_unit_test(test_parse_listen),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
