/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the import's untrusted input (issue 35.2): any bytes
 * as an archive's manifest. It is refused or accepted; an accepted one
 * names only canonical paths, and ws_archive_verify() of it against a
 * small tree (which holds a symlink out of itself) never reads outside it:
 * the fuzzer's own file outside the tree is opened by no check (its atime
 * is watched). Never a crash or a leak.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ws-archive.h"

/* Not assert(): release builds define NDEBUG, and these checks are the point. */
#define CHECK(x)                                                                 \
    do {                                                                         \
        if (!(x)) {                                                              \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #x); \
            abort();                                                             \
        }                                                                        \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char top[] = "/tmp/layoutd-fuzz-archive.XXXXXX";
static char tree[64];

/* top/tree: a file "f" ("hi"), a directory "d", a symlink "out" -> top
 * (above the tree), and top/victim beside the tree. */
static void make_tree(void) {
    char p[128];
    CHECK(mkdtemp(top));
    snprintf(tree, sizeof tree, "%s/tree", top);
    CHECK(mkdir(tree, 0755) == 0);
    snprintf(p, sizeof p, "%s/d", tree);
    CHECK(mkdir(p, 0755) == 0);
    snprintf(p, sizeof p, "%s/f", tree);
    FILE *f = fopen(p, "w");
    CHECK(f && fputs("hi", f) >= 0 && fclose(f) == 0);
    snprintf(p, sizeof p, "%s/victim", top);
    f = fopen(p, "w");
    CHECK(f && fputs("secret\n", f) >= 0 && fclose(f) == 0);
    snprintf(p, sizeof p, "%s/out", tree);
    CHECK(symlink(top, p) == 0);
}

static void remove_tree(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
    (void) !system(cmd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static bool ready;
    if (!ready) {
        make_tree();
        atexit(remove_tree);
        ready = true;
    }
    if (size > 64 * 1024)
        return 0;
    json_tokener *tok = json_tokener_new();
    CHECK(tok);
    json_object *m = json_tokener_parse_ex(tok, (const char *) data, (int) size);
    json_tokener_free(tok);
    if (!m)
        return 0;
    char *msg = NULL;
    int r = ws_archive_manifest_check(m, NULL, &msg);
    CHECK(r == 0 || (r == -EBADMSG && msg));
    free(msg);
    msg = NULL;
    if (r == 0) {
        json_object *files = NULL;
        CHECK(json_object_object_get_ex(m, "files", &files));
        json_object_object_foreach(files, path, line) {
            (void) line;
            CHECK(path[0] != '/' && strncmp(path, "../", 3) != 0 && !strstr(path, "/../") && !strstr(path, "//"));
            CHECK(ws_archive_name_is_canonical(path, true));
        }
        /* The victim: its atime set to the epoch (the tree is on /tmp,
         * relatime updates an atime older than mtime), so a read of it by
         * verify would move it. */
        char victim[128];
        snprintf(victim, sizeof victim, "%s/victim", top);
        struct timespec ts[2] = { { 0, 0 }, { 0, UTIME_OMIT } };
        CHECK(utimensat(AT_FDCWD, victim, ts, 0) == 0);
        uint64_t checked = 0;
        r = ws_archive_verify(tree, m, &checked, &msg);
        CHECK(r <= 0);
        free(msg);
        struct stat st;
        CHECK(stat(victim, &st) == 0 && st.st_atim.tv_sec == 0);
    }
    json_object_put(m);
    return 0;
}
