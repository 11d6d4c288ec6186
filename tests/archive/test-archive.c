/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests for workspace archives (src/archive): a round trip through
 * export, extract and verify, and hostile archives and manifests (issue
 * 35.2), each refused with nothing written or read outside the
 * destination, and no message showing what lies outside.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <cmocka.h>

#include <archive.h>
#include <archive_entry.h>

#include "util.h"
#include "ws-archive.h"

/* The outside file's content. */
#define SECRET "secret\n"

typedef struct Fixture {
    char *top;     /* the test's directory */
    char dest[512];   /* an import's destination, top/dest */
    char outside[512]; /* a directory beside it, top/outside, holding victim */
    char archive[512];
} Fixture;

static int setup(void **state) {
    Fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    f->top = strdup("/tmp/layoutd-test-archive.XXXXXX");
    assert_non_null(mkdtemp(f->top));
    snprintf(f->dest, sizeof f->dest, "%s/dest", f->top);
    snprintf(f->outside, sizeof f->outside, "%s/outside", f->top);
    snprintf(f->archive, sizeof f->archive, "%s/a.tar.gz", f->top);
    assert_int_equal(mkdir(f->dest, 0755), 0);
    assert_int_equal(mkdir(f->outside, 0755), 0);
    char p[600];
    snprintf(p, sizeof p, "%s/victim", f->outside);
    FILE *v = fopen(p, "w");
    assert_non_null(v);
    fputs(SECRET, v);
    fclose(v);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    Fixture *f = *state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->top);
    assert_int_equal(system(cmd), 0);
    free(f->top);
    free(f);
    return 0;
}

/* One entry of a hand-made archive: type, name, and data or link. */
typedef struct Ent {
    mode_t type;
    const char *name;
    const char *data;     /* regular file */
    const char *symlink;  /* symlink target */
    const char *hardlink; /* hard link's first name */
} Ent;

static void write_entry(struct archive *a, const Ent *x) {
    struct archive_entry *e = archive_entry_new();
    assert_non_null(e);
    archive_entry_set_pathname(e, x->name);
    archive_entry_set_filetype(e, x->type);
    archive_entry_set_perm(e, x->type == AE_IFDIR ? 0755 : 0644);
    archive_entry_set_uid(e, getuid());
    archive_entry_set_gid(e, getgid());
    if (x->symlink)
        archive_entry_set_symlink(e, x->symlink);
    if (x->hardlink)
        archive_entry_set_hardlink(e, x->hardlink);
    if (x->type == AE_IFCHR)
        archive_entry_set_rdev(e, makedev(1, 3));
    size_t len = x->data ? strlen(x->data) : 0;
    archive_entry_set_size(e, (la_int64_t) len);
    assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
    if (len)
        assert_int_equal(archive_write_data(a, x->data, len), (la_ssize_t) len);
    archive_entry_free(e);
}

/* Writes a gzip'd pax archive as an attacker would: our metadata first,
 * the entries, then manifest_json (NULL: none) as the manifest. */
static void write_archive(const char *path, const Ent *ents, size_t n, const char *manifest_json) {
    struct archive *a = archive_write_new();
    assert_non_null(a);
    assert_int_equal(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
    assert_int_equal(archive_write_add_filter_gzip(a), ARCHIVE_OK);
    assert_int_equal(archive_write_open_filename(a, path), ARCHIVE_OK);
    write_entry(a, &(Ent) { AE_IFREG, WS_ARCHIVE_WORKSPACE, "{\"format\":1,\"id\":\"x\"}", NULL, NULL });
    for (size_t i = 0; i < n; i++)
        write_entry(a, &ents[i]);
    if (manifest_json)
        write_entry(a, &(Ent) { AE_IFREG, WS_ARCHIVE_MANIFEST, manifest_json, NULL, NULL });
    assert_int_equal(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
}

/* Opens and extracts f->archive into f->dest. Returns extract's result,
 * *ret_message its message (or the open's). */
static int import(Fixture *f, char **ret_message) {
    WsArchiveReader *r = NULL;
    json_object *meta = NULL, *manifest = NULL;
    int k = ws_archive_reader_open(f->archive, &r, &meta, ret_message);
    if (k < 0)
        return k;
    k = ws_archive_extract(r, f->dest, &manifest, NULL, ret_message);
    if (k == 0)
        k = ws_archive_verify(f->dest, manifest, NULL, ret_message);
    json_object_put(meta);
    json_object_put(manifest);
    ws_archive_reader_free(r);
    return k;
}

/* Nothing appeared beside dest; the victim is untouched. */
static void assert_outside_untouched(Fixture *f) {
    char p[600];
    struct stat st;
    snprintf(p, sizeof p, "%s/victim", f->outside);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_size, (off_t) strlen(SECRET));
    snprintf(p, sizeof p, "%s/escape", f->top);
    assert_int_equal(access(p, F_OK), -1);
    snprintf(p, sizeof p, "%s/escape", f->outside);
    assert_int_equal(access(p, F_OK), -1);
}

static const char *sha_of(const char *s, char hex[65]) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "printf '%%s' '%s' | sha256sum", s);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    assert_non_null(fgets(hex, 65, p));
    pclose(p);
    return hex;
}

static void test_canonical(void **state) {
    (void) state;
    assert_true(ws_archive_path_is_canonical("a"));
    assert_true(ws_archive_path_is_canonical("a/b.c/..d"));
    assert_true(ws_archive_path_is_canonical(".git/config"));
    assert_false(ws_archive_path_is_canonical(""));
    assert_false(ws_archive_path_is_canonical(NULL));
    assert_false(ws_archive_path_is_canonical("/etc/shadow"));
    assert_false(ws_archive_path_is_canonical("../x"));
    assert_false(ws_archive_path_is_canonical("a/../../x"));
    assert_false(ws_archive_path_is_canonical("a/.."));
    assert_false(ws_archive_path_is_canonical("./a"));
    assert_false(ws_archive_path_is_canonical("a/"));
    assert_false(ws_archive_path_is_canonical("a//b"));
    assert_false(ws_archive_path_is_canonical("."));
    assert_true(ws_archive_path_is_reserved(".layoutd-export/x"));
    assert_false(ws_archive_path_is_reserved(".layoutd-exports"));
}

static void test_manifest_check(void **state) {
    (void) state;
    char hex[65];
    sha_of("hi", hex);
    char good[512];
    snprintf(good, sizeof good,
             "{\"format\":1,\"entries\":3,\"files\":{\"d\":{\"type\":\"dir\",\"mode\":493},"
             "\"d/f\":{\"type\":\"file\",\"mode\":420,\"size\":2,\"sha256\":\"%s\"},"
             "\"h\":{\"type\":\"hardlink\",\"mode\":420,\"link\":\"d/f\"}}}",
             hex);
    json_object *m = json_tokener_parse(good);
    assert_non_null(m);
    char *msg = NULL;
    assert_int_equal(ws_archive_manifest_check(m, NULL, &msg), 0);
    json_object *names = json_tokener_parse("{\"d\":null,\"d/f\":null,\"h\":null}");
    assert_int_equal(ws_archive_manifest_check(m, names, &msg), 0);
    /* An entry the manifest does not list. */
    json_object_object_add(names, "extra", NULL);
    assert_int_equal(ws_archive_manifest_check(m, names, &msg), -EBADMSG);
    assert_non_null(strstr(msg, "not every entry is checked"));
    msg = mfree(msg);
    json_object_put(names);
    /* A listed path the archive does not hold. */
    names = json_tokener_parse("{\"d\":null,\"d/f\":null}");
    assert_int_equal(ws_archive_manifest_check(m, names, &msg), -EBADMSG);
    assert_non_null(strstr(msg, "no such entry"));
    msg = mfree(msg);
    json_object_put(names);
    json_object_put(m);

    static const char *bad[] = {
        "[]",
        "{\"format\":2,\"entries\":0,\"files\":{}}",
        "{\"format\":1,\"entries\":1,\"files\":{}}",
        "{\"format\":1,\"files\":{}}",
        ("{\"format\":1,\"entries\":1,\"files\":{\"/etc/shadow\":{\"type\":\"file\",\"mode\":416,\"size\":1,"
         "\"sha256\":\"0000000000000000000000000000000000000000000000000000000000000000\"}}}"),
        "{\"format\":1,\"entries\":1,\"files\":{\"../x\":{\"type\":\"dir\",\"mode\":493}}}",
        "{\"format\":1,\"entries\":1,\"files\":{\"a/./b\":{\"type\":\"dir\",\"mode\":493}}}",
        "{\"format\":1,\"entries\":1,\"files\":{\".layoutd-export/x\":{\"type\":\"dir\",\"mode\":493}}}",
        "{\"format\":1,\"entries\":1,\"files\":{\"a\":{\"type\":\"file\",\"mode\":420,\"size\":1,\"sha256\":\"zz\"}}}",
        "{\"format\":1,\"entries\":1,\"files\":{\"a\":{\"type\":\"dev\",\"mode\":420}}}",
        "{\"format\":1,\"entries\":1,\"files\":{\"a\":{\"type\":\"dir\",\"mode\":99999}}}",
        "{\"format\":1,\"entries\":1,\"files\":{\"a\":{\"type\":\"hardlink\",\"mode\":420,\"link\":\"/etc/shadow\"}}}",
        "{\"format\":1,\"entries\":1,\"files\":{\"a\":{\"type\":\"hardlink\",\"mode\":420,\"link\":\"b\"}}}",
        "{\"format\":1,\"entries\":1,\"files\":{\"a\":{\"type\":\"symlink\",\"mode\":511}}}",
        "{\"format\":1,\"entries\":1,\"files\":{\"a\":7}}",
    };
    for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
        m = json_tokener_parse(bad[i]);
        assert_non_null(m);
        if (ws_archive_manifest_check(m, NULL, &msg) != -EBADMSG)
            fail_msg("manifest %zu accepted: %s", i, bad[i]);
        msg = mfree(msg);
        json_object_put(m);
    }
}

/* Export of a tree with a file, a hard link, a symlink out of the tree and
 * a directory; extract and verify it elsewhere. */
static void test_round_trip(void **state) {
    Fixture *f = *state;
    char src[600], p[700];
    snprintf(src, sizeof src, "%s/src", f->top);
    assert_int_equal(mkdir(src, 0755), 0);
    snprintf(p, sizeof p, "%s/d", src);
    assert_int_equal(mkdir(p, 0750), 0);
    snprintf(p, sizeof p, "%s/d/f", src);
    FILE *x = fopen(p, "w");
    assert_non_null(x);
    fputs("hello\n", x);
    fclose(x);
    char q[700];
    snprintf(q, sizeof q, "%s/h", src);
    assert_int_equal(link(p, q), 0);
    snprintf(q, sizeof q, "%s/out", src);
    assert_int_equal(symlink(f->outside, q), 0);

    int fd = open(f->archive, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    json_object *meta = json_tokener_parse("{\"id\":\"x\"}");
    char *msg = NULL;
    WsArchiveStats st = {};
    assert_int_equal(ws_archive_export(src, meta, fd, &st, &msg), 0);
    close(fd);
    json_object_put(meta);
    assert_int_equal(st.entries, 4);
    if (import(f, &msg) != 0)
        fail_msg("round trip: %s", msg);
    snprintf(p, sizeof p, "%s/out", f->dest);
    char target[600] = {};
    assert_true(readlink(p, target, sizeof target - 1) > 0);
    assert_string_equal(target, f->outside);

    /* verify() through that symlink: the victim's right hash and size,
     * but the path leaves the destination, so it is refused unread. */
    char hex[65], mj[600];
    sha_of(SECRET, hex);
    snprintf(mj, sizeof mj,
             "{\"format\":1,\"entries\":1,\"files\":{\"out/victim\":{\"type\":\"file\",\"mode\":420,\"size\":7,"
             "\"sha256\":\"%s\"}}}",
             hex);
    json_object *m = json_tokener_parse(mj);
    assert_int_equal(ws_archive_verify(f->dest, m, NULL, &msg), -EBADMSG);
    assert_non_null(strstr(msg, "leaves the workspace"));
    msg = mfree(msg);
    json_object_put(m);
    /* A wrong hash through it: the message shows no digest of the victim. */
    snprintf(mj, sizeof mj,
             "{\"format\":1,\"entries\":1,\"files\":{\"out/victim\":{\"type\":\"file\",\"mode\":420,\"size\":7,"
             "\"sha256\":\"%064d\"}}}",
             0);
    m = json_tokener_parse(mj);
    assert_int_equal(ws_archive_verify(f->dest, m, NULL, &msg), -EBADMSG);
    assert_null(strstr(msg, hex));
    msg = mfree(msg);
    json_object_put(m);
    assert_outside_untouched(f);
}

/* A hostile archive: refused, with `what` in the message, and nothing
 * outside touched. */
static void assert_refused(Fixture *f, const Ent *ents, size_t n, const char *manifest, const char *what) {
    char *msg = NULL;
    write_archive(f->archive, ents, n, manifest);
    int k = import(f, &msg);
    if (k >= 0)
        fail_msg("a hostile archive was imported (manifest %s)", manifest ?: "(none)");
    assert_non_null(msg);
    if (what && !strstr(msg, what))
        fail_msg("refused, but the message '%s' does not say '%s'", msg, what);
    char hex[65];
    assert_null(strstr(msg, sha_of(SECRET, hex)));
    free(msg);
    assert_outside_untouched(f);
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir '%s'", f->dest, f->dest);
    assert_int_equal(system(cmd), 0);
}

static void test_hostile(void **state) {
    Fixture *f = *state;
    char hex[65], abs_victim[600], mj[1200], esc[600];
    sha_of(SECRET, hex);
    snprintf(abs_victim, sizeof abs_victim, "%s/victim", f->outside);

    /* The manifest names a host file by its absolute path, with its true
     * hash: the round 3 hole. */
    Ent one[] = { { AE_IFREG, "a", "hi", NULL, NULL } };
    char ha[65];
    sha_of("hi", ha);
    snprintf(mj, sizeof mj,
             "{\"format\":1,\"entries\":2,\"files\":{\"a\":{\"type\":\"file\",\"mode\":420,\"size\":2,\"sha256\":"
             "\"%s\"},\"%s\":{\"type\":\"file\",\"mode\":420,\"size\":7,\"sha256\":\"%s\"}}}",
             ha, abs_victim, hex);
    assert_refused(f, one, 1, mj, "not a relative path");
    /* The same by "..". */
    snprintf(mj, sizeof mj,
             "{\"format\":1,\"entries\":2,\"files\":{\"a\":{\"type\":\"file\",\"mode\":420,\"size\":2,\"sha256\":"
             "\"%s\"},\"../outside/victim\":{\"type\":\"file\",\"mode\":420,\"size\":7,\"sha256\":\"%s\"}}}",
             ha, hex);
    assert_refused(f, one, 1, mj, "not a relative path");
    /* An entry the manifest does not list. */
    Ent two[] = { { AE_IFREG, "a", "hi", NULL, NULL }, { AE_IFREG, "b", "unchecked", NULL, NULL } };
    snprintf(mj, sizeof mj,
             "{\"format\":1,\"entries\":1,\"files\":{\"a\":{\"type\":\"file\",\"mode\":420,\"size\":2,\"sha256\":"
             "\"%s\"}}}",
             ha);
    assert_refused(f, two, 2, mj, "not every entry is checked");
    /* An "entries" count that lies. */
    snprintf(mj, sizeof mj,
             "{\"format\":1,\"entries\":9,\"files\":{\"a\":{\"type\":\"file\",\"mode\":420,\"size\":2,\"sha256\":"
             "\"%s\"}}}",
             ha);
    assert_refused(f, one, 1, mj, "entries");
    /* Entries that leave: "..", absolute, through a symlink, a hard link
     * to a host file. */
    snprintf(esc, sizeof esc, "%s/escape", f->top);
    Ent dotdot[] = { { AE_IFREG, "../escape", "x", NULL, NULL } };
    assert_refused(f, dotdot, 1, "{}", "not a relative path");
    Ent absent[] = { { AE_IFREG, esc, "x", NULL, NULL } };
    assert_refused(f, absent, 1, "{}", "not a relative path");
    Ent through[] = { { AE_IFLNK, "l", NULL, f->outside, NULL }, { AE_IFREG, "l/escape", "x", NULL, NULL } };
    assert_refused(f, through, 2, "{}", NULL);
    Ent hard[] = { { AE_IFREG, "h", NULL, NULL, abs_victim } };
    assert_refused(f, hard, 1, "{}", "hard link");
    /* A device node, a name twice, a name libarchive would clean up. */
    Ent dev[] = { { AE_IFCHR, "mem", NULL, NULL, NULL } };
    assert_refused(f, dev, 1, "{}", "device node");
    Ent twice[] = { { AE_IFREG, "a", "hi", NULL, NULL }, { AE_IFREG, "a", "hi", NULL, NULL } };
    assert_refused(f, twice, 2, "{}", "twice");
    Ent dotslash[] = { { AE_IFREG, "./a", "hi", NULL, NULL } };
    assert_refused(f, dotslash, 1, "{}", "not a relative path");
    /* No manifest, a manifest that is not JSON. */
    assert_refused(f, one, 1, NULL, "without its manifest");
    assert_refused(f, one, 1, "[1,2", "not a JSON object");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_canonical),
        cmocka_unit_test(test_manifest_check),
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hostile, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
