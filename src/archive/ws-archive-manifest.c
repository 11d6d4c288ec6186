/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The archive's manifest as untrusted input (issue 35.2): its shape, its
 * paths, and its agreement with the entries the archive held, all decided
 * before the check reads a byte back. The check itself (ws-archive-import.c)
 * then only opens names this file accepted, beneath the destination.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ws-archive.h"
#include "ws-archive-internal.h"

/* The rule on the first n bytes of p. */
static bool canonical_n(const char *p, size_t n) {
    if (n == 0 || p[0] == '/' || n >= PATH_MAX || memchr(p, 0, n))
        return false;
    for (size_t c = 0;;) {
        const char *slash = memchr(p + c, '/', n - c);
        size_t end = slash ? (size_t) (slash - p) : n, len = end - c;
        /* "", "." and ".." components: "a//b", "a/", "./a", "a/../b". */
        if (len == 0 || (len == 1 && p[c] == '.') || (len == 2 && p[c] == '.' && p[c + 1] == '.'))
            return false;
        if (end == n)
            return true;
        c = end + 1;
    }
}

bool ws_archive_path_is_canonical(const char *p) {
    return p && canonical_n(p, strlen(p));
}

bool ws_archive_name_is_canonical(const char *p, bool dir) {
    if (!p)
        return false;
    size_t n = strlen(p);
    /* Exports name directories as tar does, "d/". */
    if (dir && n > 1 && p[n - 1] == '/')
        n--;
    return canonical_n(p, n);
}

bool ws_archive_path_is_reserved(const char *p) {
    size_t n = strlen(WS_ARCHIVE_DIR);
    return p && strncmp(p, WS_ARCHIVE_DIR, n) == 0 && (p[n] == 0 || p[n] == '/');
}

_printf_(2, 3) static int refuse(char **ret_message, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (ret_message && !*ret_message && vasprintf(ret_message, fmt, ap) < 0)
        *ret_message = NULL;
    va_end(ap);
    return -EBADMSG;
}

static bool is_sha256_hex(const char *s) {
    if (!s || strlen(s) != 64)
        return false;
    return strspn(s, "0123456789abcdef") == 64;
}

/* The members of one manifest line that its type needs, typed. */
static int check_line(json_object *files, const char *path, json_object *m, char **ret_message) {
    json_object *v;
    if (!json_object_is_type(m, json_type_object))
        return refuse(ret_message, "manifest: '%s' is not an object", path);
    if (!json_object_object_get_ex(m, "type", &v) || !json_object_is_type(v, json_type_string))
        return refuse(ret_message, "manifest: '%s' has no type", path);
    const char *type = json_object_get_string(v);
    if (!STR_IN_SET(type, "file", "hardlink", "dir", "symlink", "other"))
        return refuse(ret_message, "manifest: '%s' has an unknown type '%s'", path, type);
    if (!json_object_object_get_ex(m, "mode", &v) || !json_object_is_type(v, json_type_int) ||
        json_object_get_int64(v) < 0 || json_object_get_int64(v) > 07777)
        return refuse(ret_message, "manifest: '%s' has no mode, or one out of range", path);
    if (streq(type, "file")) {
        if (!json_object_object_get_ex(m, "size", &v) || !json_object_is_type(v, json_type_int) ||
            json_object_get_int64(v) < 0)
            return refuse(ret_message, "manifest: '%s' has no size", path);
        if (!json_object_object_get_ex(m, "sha256", &v) || !json_object_is_type(v, json_type_string) ||
            !is_sha256_hex(json_object_get_string(v)))
            return refuse(ret_message, "manifest: '%s' has no sha256 of 64 hex digits", path);
    }
    if (STR_IN_SET(type, "hardlink", "symlink") &&
        (!json_object_object_get_ex(m, "link", &v) || !json_object_is_type(v, json_type_string)))
        return refuse(ret_message, "manifest: '%s' is a %s without its link", path, type);
    if (streq(type, "hardlink")) {
        /* A hard link's first name is a path opened by the check: the same
         * rule as every manifest path, and it is a file of this archive. */
        const char *first = json_object_get_string(v);
        json_object *fm, *ft;
        if (!ws_archive_path_is_canonical(first) || ws_archive_path_is_reserved(first))
            return refuse(ret_message, "manifest: '%s' is a hard link to a path that is not a relative path below "
                                       "the workspace", path);
        if (!json_object_object_get_ex(files, first, &fm) || !json_object_object_get_ex(fm, "type", &ft) ||
            !streq_ptr(json_object_get_string(ft), "file"))
            return refuse(ret_message, "manifest: '%s' is a hard link to '%s', which is not a file of the archive",
                          path, first);
    }
    return 0;
}

int ws_archive_manifest_check(json_object *manifest, json_object *names, char **ret_message) {
    json_object *files, *v;
    if (!json_object_is_type(manifest, json_type_object))
        return refuse(ret_message, "manifest: not a JSON object");
    if (!json_object_object_get_ex(manifest, "format", &v) || !json_object_is_type(v, json_type_int) ||
        json_object_get_int64(v) != WS_ARCHIVE_FORMAT)
        return refuse(ret_message, "manifest: format is not %d", WS_ARCHIVE_FORMAT);
    if (!json_object_object_get_ex(manifest, "files", &files) || !json_object_is_type(files, json_type_object))
        return refuse(ret_message, "manifest: no \"files\" object");
    size_t listed = (size_t) json_object_object_length(files);
    if (!json_object_object_get_ex(manifest, "entries", &v) || !json_object_is_type(v, json_type_int) ||
        json_object_get_int64(v) < 0 || (uint64_t) json_object_get_int64(v) != listed)
        return refuse(ret_message, "manifest: \"entries\" is not the number of paths it lists (%zu)", listed);

    json_object_object_foreach(files, path, m) {
        json_object *t = NULL;
        bool dir = json_object_object_get_ex(m, "type", &t) && streq_ptr(json_object_get_string(t), "dir");
        if (!ws_archive_name_is_canonical(path, dir) || ws_archive_path_is_reserved(path))
            return refuse(ret_message, "manifest: '%s' is not a relative path below the workspace", path);
        int r = check_line(files, path, m, ret_message);
        if (r < 0)
            return r;
        /* names holds names as on disk, "d" for "d/". */
        size_t n = strlen(path);
        _cleanup_free_ char *disk = strndup(path, path[n - 1] == '/' ? n - 1 : n);
        if (!disk)
            return -ENOMEM;
        if (path[n - 1] == '/' && json_object_object_get_ex(files, disk, NULL))
            return refuse(ret_message, "manifest: '%s' is listed twice", disk);
        if (names && !json_object_object_get_ex(names, disk, NULL))
            return refuse(ret_message, "manifest: '%s' is listed but the archive holds no such entry", path);
    }
    /* Both ways: every listed path is an entry, each once, and there are
     * as many entries as paths, so no entry went unlisted (it would have
     * been imported unchecked). */
    if (names && (size_t) json_object_object_length(names) != listed)
        return refuse(ret_message, "the archive holds %d entries, its manifest lists %zu: not every entry is checked",
                      json_object_object_length(names), listed);
    return 0;
}
