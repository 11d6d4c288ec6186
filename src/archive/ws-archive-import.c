/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading a workspace archive (ws-archive.h): the metadata first, then the
 * entries extracted with libarchive's disk writer (which restores modes,
 * owners, times, xattrs and links, and refuses paths that would leave the
 * destination), then the manifest; and the check of a tree against it.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "ws-archive.h"
#include "ws-archive-internal.h"

#define READ_BLOCK (256 * 1024)
#define META_MAX (64 * 1024 * 1024) /* the manifest of a very large tree */

struct WsArchiveReader {
    struct archive *in;
};

void ws_archive_hex(const unsigned char *b, size_t n, char *out) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = 0;
}

_printf_(3, 4) static int say(char **ret_message, int r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (ret_message && !*ret_message && vasprintf(ret_message, fmt, ap) < 0)
        *ret_message = NULL;
    va_end(ap);
    return r;
}

/* A read failure of the archive: a damaged or cut stream is -EBADMSG. */
static int read_fail(struct archive *a, char **ret_message, const char *what) {
    int e = archive_errno(a);
    int r = e == ENOENT || e == EACCES || e == ENOMEM || e == EISDIR ? -e : -EBADMSG;
    return say(ret_message, r, "%s: %s", what, archive_error_string(a) ?: "damaged archive");
}

/* The current entry's data as a NUL-terminated string, parsed as JSON. */
static int read_json(struct archive *a, struct archive_entry *e, json_object **ret, char **ret_message) {
    la_int64_t size = archive_entry_size(e);
    const char *name = archive_entry_pathname(e);
    if (size < 0 || size > META_MAX)
        return say(ret_message, -EBADMSG, "%s: size %lld out of range", name, (long long) size);
    _cleanup_free_ char *buf = malloc((size_t) size + 1);
    if (!buf)
        return -ENOMEM;
    size_t have = 0;
    while (have < (size_t) size) {
        la_ssize_t n = archive_read_data(a, buf + have, (size_t) size - have);
        if (n < 0)
            return read_fail(a, ret_message, name);
        if (n == 0)
            return say(ret_message, -EBADMSG, "%s: truncated", name);
        have += (size_t) n;
    }
    buf[have] = 0;
    json_tokener *tok = json_tokener_new();
    if (!tok)
        return -ENOMEM;
    json_object *o = json_tokener_parse_ex(tok, buf, (int) have);
    bool ok = o && json_tokener_get_error(tok) == json_tokener_success && json_object_is_type(o, json_type_object);
    json_tokener_free(tok);
    if (!ok) {
        json_object_put(o);
        return say(ret_message, -EBADMSG, "%s: not a JSON object", name);
    }
    *ret = o;
    return 0;
}

int ws_archive_reader_open(const char *path, WsArchiveReader **ret, json_object **ret_meta, char **ret_message) {
    _cleanup_(ws_archive_reader_freep) WsArchiveReader *r = calloc(1, sizeof(*r));
    struct archive_entry *e = NULL;
    int s;
    if (!r || !(r->in = archive_read_new()))
        return -ENOMEM;
    /* Ours is zstd over pax; gzip or none are taken too (an operator who
     * recompressed it), other formats are not. */
    archive_read_support_filter_zstd(r->in);
    archive_read_support_filter_gzip(r->in);
    archive_read_support_format_tar(r->in);
    if (path && streq(path, "-"))
        path = NULL;
    if (archive_read_open_filename(r->in, path, READ_BLOCK) != ARCHIVE_OK)
        return read_fail(r->in, ret_message, "not a readable archive");
    s = archive_read_next_header(r->in, &e);
    if (s == ARCHIVE_EOF)
        return say(ret_message, -EBADMSG, "empty archive");
    if (s < ARCHIVE_WARN)
        return read_fail(r->in, ret_message, "not a workspace archive");
    if (!streq_ptr(archive_entry_pathname(e), WS_ARCHIVE_WORKSPACE))
        return say(ret_message, -EBADMSG, "not a workspace archive: its first entry is '%s', not %s",
                   archive_entry_pathname(e) ?: "", WS_ARCHIVE_WORKSPACE);
    json_object *meta = NULL;
    int k = read_json(r->in, e, &meta, ret_message);
    if (k < 0)
        return k;
    json_object *f = NULL;
    if (!json_object_object_get_ex(meta, "format", &f) || json_object_get_int(f) != WS_ARCHIVE_FORMAT) {
        json_object_put(meta);
        return say(ret_message, -EPROTONOSUPPORT, "archive format %s is not the one this version reads (%d)",
                   f ? json_object_get_string(f) : "(none)", WS_ARCHIVE_FORMAT);
    }
    *ret_meta = meta;
    *ret = TAKE_PTR(r);
    return 0;
}

WsArchiveReader *ws_archive_reader_free(WsArchiveReader *r) {
    if (!r)
        return NULL;
    if (r->in)
        archive_read_free(r->in);
    free(r);
    return NULL;
}

/*
 * Refuses an entry before anything of it is written: a name that is not a
 * canonical relative path (libarchive would take "./a" and "a/" as "a",
 * which the manifest's exact names must match), a name seen before (a
 * second entry would replace the first after it was counted), a hard link
 * to such a name, and a device node (a workspace is its tenant's files; a
 * device made by root would be a door to the host's disks).
 */
static int entry_admissible(struct archive_entry *e, const char *name, json_object *names, char **ret_message) {
    const char *p = archive_entry_pathname(e);
    const char *link = archive_entry_hardlink(e);
    mode_t type = archive_entry_filetype(e);
    if (!ws_archive_name_is_canonical(p, type == AE_IFDIR))
        return say(ret_message, -EBADMSG, "refused entry '%s': not a relative path below the workspace", p ?: "");
    if (json_object_object_get_ex(names, name, NULL))
        return say(ret_message, -EBADMSG, "refused entry '%s': the archive holds it twice", p);
    if (link && !ws_archive_path_is_canonical(link))
        return say(ret_message, -EBADMSG, "refused entry '%s': a hard link to '%s', not a relative path below the "
                   "workspace", p, link);
    if (link && !json_object_object_get_ex(names, link, NULL))
        return say(ret_message, -EBADMSG, "refused entry '%s': a hard link to '%s', which the archive did not hold "
                   "before it", p, link);
    if (type == AE_IFBLK || type == AE_IFCHR)
        return say(ret_message, -EBADMSG, "refused entry '%s': a device node, which a workspace does not hold", p);
    return 0;
}

int ws_archive_extract(WsArchiveReader *r, const char *dest, json_object **ret_manifest, WsArchiveStats *ret_stats,
                       char **ret_message) {
    WsArchiveStats st = {};
    json_object *manifest = NULL, *names = NULL;
    struct archive *disk = NULL;
    int k = 0, cwd = -EBADF;
    if (!r || !dest || !ret_manifest)
        return -EINVAL;
    /* The names written, to match the manifest's both ways at the end. */
    if (!(names = json_object_new_object()))
        return -ENOMEM;
    /* Names in the archive are relative; the disk writer takes them from
     * the working directory, which is how its "no absolute path, no ..,
     * no symlink on the way" checks keep every write inside dest. */
    cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cwd < 0)
        return say(ret_message, -errno, "cannot open the working directory: %m");
    if (chdir(dest) < 0) {
        k = say(ret_message, -errno, "cannot enter %s: %m", dest);
        goto out;
    }
    if (!(disk = archive_write_disk_new())) {
        k = -ENOMEM;
        goto out;
    }
    archive_write_disk_set_options(disk, ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_OWNER | ARCHIVE_EXTRACT_TIME |
                                             ARCHIVE_EXTRACT_XATTR | ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                                             ARCHIVE_EXTRACT_SECURE_NODOTDOT |
                                             ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS);
    /* Numeric ids, as written: no name lookups. */
    for (;;) {
        struct archive_entry *e;
        int s = archive_read_next_header(r->in, &e);
        if (s == ARCHIVE_EOF)
            break;
        if (s < ARCHIVE_WARN) {
            k = read_fail(r->in, ret_message, "reading the archive");
            goto out;
        }
        const char *p = archive_entry_pathname(e);
        if (ws_archive_path_is_reserved(p)) {
            if (streq(p, WS_ARCHIVE_MANIFEST) && !manifest) {
                if ((k = read_json(r->in, e, &manifest, ret_message)) < 0)
                    goto out;
                continue;
            }
            k = say(ret_message, -EBADMSG, "unexpected entry '%s'", p);
            goto out;
        }
        if (manifest) {
            k = say(ret_message, -EBADMSG, "entry '%s' after the manifest", p ?: "");
            goto out;
        }
        /* Directories are named "d/" in the stream and "d" in the
         * manifest: the set holds names as they are on disk. */
        _cleanup_free_ char *name = strdup(p ?: "");
        size_t nl = name ? strlen(name) : 0;
        if (!name) {
            k = -ENOMEM;
            goto out;
        }
        if (nl > 1 && name[nl - 1] == '/' && archive_entry_filetype(e) == AE_IFDIR)
            name[nl - 1] = 0;
        if ((k = entry_admissible(e, name, names, ret_message)) < 0)
            goto out;
        json_object_object_add(names, name, NULL);
        s = archive_write_header(disk, e);
        if (s < ARCHIVE_WARN) {
            int e2 = archive_errno(disk);
            k = say(ret_message, e2 > 0 ? -e2 : -EIO, "cannot create %s: %s", p,
                    archive_error_string(disk) ?: "error");
            goto out;
        }
        if (s == ARCHIVE_WARN) {
            /* An xattr, owner or mode the destination would not take: the
             * manifest does not hash those, so nothing later would notice.
             * The import fails (and is removed) instead. */
            k = say(ret_message, -EIO, "cannot restore all of %s: %s", p, archive_error_string(disk) ?: "error");
            goto out;
        }
        st.entries++;
        if (archive_entry_filetype(e) == AE_IFREG && !archive_entry_hardlink(e) && archive_entry_size(e) > 0) {
            const void *buf;
            size_t size;
            la_int64_t off;
            for (;;) {
                s = archive_read_data_block(r->in, &buf, &size, &off);
                if (s == ARCHIVE_EOF)
                    break;
                if (s < ARCHIVE_WARN) {
                    k = read_fail(r->in, ret_message, p);
                    goto out;
                }
                if (archive_write_data_block(disk, buf, size, off) < ARCHIVE_WARN) {
                    int e2 = archive_errno(disk);
                    k = say(ret_message, e2 > 0 ? -e2 : -EIO, "cannot write %s: %s", p,
                            archive_error_string(disk) ?: "error");
                    goto out;
                }
                st.bytes += size;
            }
            st.files++;
        }
        /* libarchive restores owners, modes, xattrs and times here, and
         * says ARCHIVE_WARN when one did not take: a failure too. */
        s = archive_write_finish_entry(disk);
        if (s != ARCHIVE_OK) {
            int e2 = archive_errno(disk);
            k = say(ret_message, e2 > 0 ? -e2 : -EIO, "cannot %s %s: %s", s == ARCHIVE_WARN ? "restore all of" : "finish",
                    p, archive_error_string(disk) ?: "error");
            goto out;
        }
    }
    if (!manifest) {
        k = say(ret_message, -EBADMSG, "the archive ends without its manifest (%s): it is incomplete",
                WS_ARCHIVE_MANIFEST);
        goto out;
    }
    if ((k = ws_archive_manifest_check(manifest, names, ret_message)) < 0)
        goto out;
    /* Directories' modes and times, held back until their contents were
     * written. */
    if (archive_write_close(disk) != ARCHIVE_OK) {
        k = say(ret_message, -EIO, "cannot finish the directories: %s", archive_error_string(disk) ?: "error");
        goto out;
    }
    *ret_manifest = TAKE_PTR(manifest);
    if (ret_stats)
        *ret_stats = st;
    k = 0;
out:
    if (disk)
        archive_write_free(disk);
    json_object_put(manifest);
    json_object_put(names);
    if (cwd >= 0) {
        (void) !fchdir(cwd);
        close(cwd);
    }
    return k;
}

/*
 * Opens path beneath dirfd the one way a manifest path may be opened: no
 * symlink followed on the way or at the end (a symlink itself comes back
 * as an O_PATH fd when flags are O_PATH), never above dirfd, never across
 * a mount. Returns: fd, or -errno (-ELOOP, -EXDEV: the path leaves).
 */
static int open_beneath(int dirfd, const char *path, int flags) {
    struct open_how how = {
        .flags = (uint64_t) (flags | O_NOFOLLOW | O_CLOEXEC),
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
    };
    long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
    return fd < 0 ? -errno : (int) fd;
}

static int file_sha256(int dirfd, const char *path, char hex[65], uint64_t *ret_size) {
    _cleanup_close_ int fd = open_beneath(dirfd, path, O_RDONLY | O_NONBLOCK);
    if (fd < 0)
        return fd;
    _cleanup_free_ char *buf = malloc(READ_BLOCK);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    int r = 0;
    uint64_t total = 0;
    if (!buf || !md || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
        r = -ENOMEM;
        goto out;
    }
    for (;;) {
        ssize_t n = read(fd, buf, READ_BLOCK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            r = -errno;
            goto out;
        }
        if (n == 0)
            break;
        EVP_DigestUpdate(md, buf, (size_t) n);
        total += (uint64_t) n;
    }
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned dlen = 0;
    EVP_DigestFinal_ex(md, d, &dlen);
    ws_archive_hex(d, dlen, hex);
    *ret_size = total;
out:
    EVP_MD_CTX_free(md);
    return r;
}

/* stat of a manifest path, opened as open_beneath() does (a symlink is
 * stat'ed itself). */
static int stat_beneath(int dirfd, const char *path, struct stat *ret) {
    _cleanup_close_ int fd = open_beneath(dirfd, path, O_PATH);
    if (fd < 0)
        return fd;
    return fstat(fd, ret) < 0 ? -errno : 0;
}

/* One manifest line against what is at path; m passed
 * ws_archive_manifest_check(). */
static int verify_one(int dfd, const char *path, json_object *m, char **ret_message) {
    json_object *v;
    const char *type = json_object_object_get_ex(m, "type", &v) ? json_object_get_string(v) : "";
    const char *link = json_object_object_get_ex(m, "link", &v) ? json_object_get_string(v) : NULL;
    int mode = json_object_object_get_ex(m, "mode", &v) ? json_object_get_int(v) : -1;
    struct stat st;
    int r = stat_beneath(dfd, path, &st);
    if (r < 0)
        return say(ret_message, -EBADMSG, "%s: missing after import: %s", path,
                   r == -ELOOP || r == -EXDEV ? "its path leaves the workspace" : strerror(-r));
    bool type_ok = streq(type, "file") || streq(type, "hardlink") ? S_ISREG(st.st_mode)
                   : streq(type, "dir")                          ? S_ISDIR(st.st_mode)
                   : streq(type, "symlink")                      ? S_ISLNK(st.st_mode)
                                                                 : true;
    if (!type_ok)
        return say(ret_message, -EBADMSG, "%s: not a %s after import", path, type);
    if (mode >= 0 && !S_ISLNK(st.st_mode) && (int) (st.st_mode & 07777) != mode)
        return say(ret_message, -EBADMSG, "%s: mode %04o, the archive says %04o", path, st.st_mode & 07777,
                   (unsigned) mode);
    if (streq(type, "symlink")) {
        char target[PATH_MAX];
        _cleanup_close_ int fd = open_beneath(dfd, path, O_PATH);
        ssize_t l = fd < 0 ? -1 : readlinkat(fd, "", target, sizeof target - 1);
        if (l < 0)
            return say(ret_message, -EBADMSG, "%s: cannot read the link: %s", path,
                       strerror(fd < 0 ? -fd : errno));
        target[l] = 0;
        if (!link || !streq(link, target))
            return say(ret_message, -EBADMSG, "%s: points to '%s', the archive says '%s'", path, target, link ?: "");
    } else if (streq(type, "hardlink")) {
        struct stat first;
        if (!link || stat_beneath(dfd, link, &first) < 0)
            return say(ret_message, -EBADMSG, "%s: its first name '%s' is missing", path, link ?: "");
        if (first.st_ino != st.st_ino || first.st_dev != st.st_dev)
            return say(ret_message, -EBADMSG, "%s: not a hard link of %s after import", path, link);
    } else if (streq(type, "file")) {
        const char *want = json_object_object_get_ex(m, "sha256", &v) ? json_object_get_string(v) : NULL;
        uint64_t size = json_object_object_get_ex(m, "size", &v) ? json_object_get_uint64(v) : 0, got = 0;
        char hex[65];
        r = file_sha256(dfd, path, hex, &got);
        if (r < 0)
            return say(ret_message, r, "%s: cannot read it back: %s", path, strerror(-r));
        if (got != size)
            return say(ret_message, -EBADMSG, "%s: %llu bytes, the archive says %llu", path, (unsigned long long) got,
                       (unsigned long long) size);
        if (!want || !streq(want, hex))
            return say(ret_message, -EBADMSG, "%s: sha256 %s, the archive says %s", path, hex, want ?: "(none)");
    }
    return 0;
}

int ws_archive_verify(const char *dest, json_object *manifest, uint64_t *ret_checked, char **ret_message) {
    json_object *files = NULL;
    uint64_t n = 0;
    if (!dest)
        return -EINVAL;
    /* Nothing is opened before the whole manifest is known to name only
     * paths below dest. */
    int r = ws_archive_manifest_check(manifest, NULL, ret_message);
    if (r < 0)
        return r;
    (void) json_object_object_get_ex(manifest, "files", &files);
    _cleanup_close_ int dfd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return say(ret_message, -errno, "cannot open %s: %m", dest);
    json_object_object_foreach(files, path, m) {
        if ((r = verify_one(dfd, path, m, ret_message)) < 0)
            return r;
        n++;
    }
    if (ret_checked)
        *ret_checked = n;
    return 0;
}
