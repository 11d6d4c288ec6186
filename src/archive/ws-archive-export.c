/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Writing a workspace archive (ws-archive.h): libarchive's disk reader
 * walks the tree (lstat, xattrs, symlink targets), its link resolver turns
 * the second name of an inode into a hard link entry, and the pax writer
 * with the zstd filter writes the stream. Each file's data is read once:
 * it goes into the archive and into its sha256 at the same time.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "ws-archive.h"
#include "ws-archive-internal.h"

#define DATA_BLOCK (256 * 1024)

typedef struct Export {
    struct archive *disk, *out;
    struct archive_entry_linkresolver *links;
    json_object *files;          /* the manifest's "files" */
    WsArchiveStats stats;
    char *message;
    char *buf;
} Export;

_printf_(3, 4) static int fail(Export *x, int r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (!x->message && vasprintf(&x->message, fmt, ap) < 0)
        x->message = NULL;
    va_end(ap);
    return r;
}

static int archive_fail(Export *x, struct archive *a, const char *what, const char *path) {
    int e = archive_errno(a);
    return fail(x, e > 0 ? -e : -EIO, "%s%s%s: %s", what, path ? " " : "", path ?: "",
                archive_error_string(a) ?: "unknown error");
}

/* A small in-memory file (the metadata, the manifest) as an entry. */
static int write_json_entry(Export *x, const char *name, json_object *o) {
    size_t len;
    const char *s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    if (!s)
        return fail(x, -ENOMEM, "cannot render %s", name);
    struct archive_entry *e = archive_entry_new();
    if (!e)
        return fail(x, -ENOMEM, "out of memory");
    archive_entry_set_pathname(e, name);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, (la_int64_t) len);
    archive_entry_set_mtime(e, time(NULL), 0);
    int r = 0;
    if (archive_write_header(x->out, e) != ARCHIVE_OK || archive_write_data(x->out, s, len) != (la_ssize_t) len)
        r = archive_fail(x, x->out, "cannot write", name);
    archive_entry_free(e);
    return r;
}

static const char *entry_type(struct archive_entry *e) {
    if (archive_entry_hardlink(e))
        return "hardlink";
    switch (archive_entry_filetype(e)) {
    case AE_IFREG:
        return "file";
    case AE_IFDIR:
        return "dir";
    case AE_IFLNK:
        return "symlink";
    default:
        return "other";
    }
}

/* Writes one entry (header and, for a file, its data), and its manifest line. */
static int write_entry(Export *x, struct archive_entry *e) {
    const char *path = archive_entry_pathname(e);
    /* tar has no socket type (libarchive's pax writer refuses one): a
     * socket is a live endpoint of a process, not data, and is left out
     * rather than failing the whole export. Counted. */
    if (archive_entry_filetype(e) == AE_IFSOCK) {
        x->stats.skipped++;
        return 0;
    }
    json_object *m = json_object_new_object();
    if (!m)
        return fail(x, -ENOMEM, "out of memory");
    json_object_object_add(x->files, path, m);
    json_object_object_add(m, "type", json_object_new_string(entry_type(e)));
    json_object_object_add(m, "mode", json_object_new_int((int) (archive_entry_perm(e) & 07777)));
    if (archive_entry_hardlink(e))
        json_object_object_add(m, "link", json_object_new_string(archive_entry_hardlink(e)));
    else if (archive_entry_filetype(e) == AE_IFLNK && archive_entry_symlink(e))
        json_object_object_add(m, "link", json_object_new_string(archive_entry_symlink(e)));

    if (archive_write_header(x->out, e) < ARCHIVE_WARN)
        return archive_fail(x, x->out, "cannot write header of", path);
    x->stats.entries++;
    bool data = archive_entry_filetype(e) == AE_IFREG && !archive_entry_hardlink(e);
    if (!data)
        return 0;

    /* The data: what the disk reader reads (through the workspace's
     * mount, so a pool stub reads as its content), hashed as it goes. */
    uint64_t want = (uint64_t) archive_entry_size(e), have = 0;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (!md || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(md);
        return fail(x, -ENOMEM, "sha256 unavailable");
    }
    int r = 0;
    while (have < want) {
        la_ssize_t n = archive_read_data(x->disk, x->buf, DATA_BLOCK);
        if (n < 0) {
            r = archive_fail(x, x->disk, "cannot read", path);
            goto out;
        }
        if (n == 0)
            break; /* shrank while we read it: padded below */
        size_t take = (size_t) MIN((uint64_t) n, want - have); /* grew: cut at the header's size */
        if (archive_write_data(x->out, x->buf, take) != (la_ssize_t) take) {
            r = archive_fail(x, x->out, "cannot write data of", path);
            goto out;
        }
        EVP_DigestUpdate(md, x->buf, take);
        have += take;
        if ((uint64_t) n > take)
            break;
    }
    if (have < want) {
        /* The header is out already: pad with zeros, and say so. */
        x->stats.changed++;
        memset(x->buf, 0, DATA_BLOCK);
        while (have < want) {
            size_t take = (size_t) MIN((uint64_t) DATA_BLOCK, want - have);
            if (archive_write_data(x->out, x->buf, take) != (la_ssize_t) take) {
                r = archive_fail(x, x->out, "cannot write data of", path);
                goto out;
            }
            EVP_DigestUpdate(md, x->buf, take);
            have += take;
        }
        json_object_object_add(m, "changed_during_export", json_object_new_boolean(true));
    }
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned dlen = 0;
    EVP_DigestFinal_ex(md, digest, &dlen);
    char hex[2 * EVP_MAX_MD_SIZE + 1];
    ws_archive_hex(digest, dlen, hex);
    json_object_object_add(m, "size", json_object_new_uint64(want));
    json_object_object_add(m, "sha256", json_object_new_string(hex));
    x->stats.files++;
    x->stats.bytes += want;
out:
    EVP_MD_CTX_free(md);
    return r;
}

static int walk_here(Export *x, const char *root) {
    if (chdir(root) < 0)
        return fail(x, -errno, "cannot enter %s: %s", root, strerror(errno));
    /* "." so that names come out relative ("./a/b"): the archive carries
     * no trace of the exporting host's paths. */
    if (archive_read_disk_open(x->disk, ".") != ARCHIVE_OK)
        return archive_fail(x, x->disk, "cannot open", root);
    struct stat rst;
    if (stat(".", &rst) < 0)
        return fail(x, -errno, "cannot stat %s: %s", root, strerror(errno));
    for (;;) {
        struct archive_entry *e = archive_entry_new(), *spare = NULL;
        if (!e)
            return fail(x, -ENOMEM, "out of memory");
        int s = archive_read_next_header2(x->disk, e);
        if (s == ARCHIVE_EOF) {
            archive_entry_free(e);
            break;
        }
        if (s < ARCHIVE_WARN) {
            int r = archive_fail(x, x->disk, "cannot walk", root);
            archive_entry_free(e);
            return r;
        }
        /* What is mounted inside the workspace is not the workspace's:
         * neither walked (checked before descending: the cache may hold a
         * package store's 100,000 files) nor its mount point written (the
         * cache, docs/layout.md: an import makes its own). */
        if (archive_entry_dev_is_set(e) && archive_entry_dev(e) != rst.st_dev) {
            archive_entry_free(e);
            continue;
        }
        (void) archive_read_disk_descend(x->disk);
        const char *p = archive_entry_pathname(e);
        if (!p || streq(p, ".")) {
            archive_entry_free(e);
            continue;
        }
        if (strncmp(p, "./", 2) == 0) {
            _cleanup_free_ char *rel = strdup(p + 2);
            if (!rel) {
                archive_entry_free(e);
                return fail(x, -ENOMEM, "out of memory");
            }
            archive_entry_set_pathname(e, rel);
        }
        /* A name of ours at the top would be taken for the metadata on
         * import: refused rather than shadowed. */
        if (strncmp(archive_entry_pathname(e), WS_ARCHIVE_DIR, strlen(WS_ARCHIVE_DIR)) == 0 &&
            (archive_entry_pathname(e)[strlen(WS_ARCHIVE_DIR)] == 0 ||
             archive_entry_pathname(e)[strlen(WS_ARCHIVE_DIR)] == '/')) {
            int r = fail(x, -EEXIST, "the workspace has a top-level %s, which the archive format reserves",
                         WS_ARCHIVE_DIR);
            archive_entry_free(e);
            return r;
        }
        /* Holes are written as zeros: the importer writes them through
         * the workspace's data path, which keeps no holes either way. */
        archive_entry_sparse_clear(e);
        /* Hard links by the identity the disk reader saw (st_dev, st_ino,
         * nlink > 1): the first name carries the data, the others link
         * to it. */
        archive_entry_linkify(x->links, &e, &spare);
        int r = e ? write_entry(x, e) : 0;
        archive_entry_free(e);
        archive_entry_free(spare);
        if (r < 0)
            return r;
    }
    return 0;
}

/* walk_here() from root, and back to the caller's working directory: a
 * library call leaves the process where it found it. */
static int walk(Export *x, const char *root) {
    _cleanup_close_ int cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cwd < 0)
        return fail(x, -errno, "cannot open the working directory: %s", strerror(errno));
    int r = walk_here(x, root);
    if (fchdir(cwd) < 0 && r >= 0)
        r = fail(x, -errno, "cannot return to the working directory: %s", strerror(errno));
    return r;
}

int ws_archive_export(const char *root, json_object *meta, int fd, WsArchiveStats *ret_stats, char **ret_message) {
    Export x = {};
    json_object *manifest = NULL, *m = NULL;
    int r;

    if (!root || !json_object_is_type(meta, json_type_object) || fd < 0)
        return -EINVAL;
    x.buf = malloc(DATA_BLOCK);
    x.disk = archive_read_disk_new();
    x.out = archive_write_new();
    x.links = archive_entry_linkresolver_new();
    x.files = json_object_new_object();
    manifest = json_object_new_object();
    m = json_object_get(meta);
    if (!x.buf || !x.disk || !x.out || !x.links || !x.files || !manifest) {
        r = fail(&x, -ENOMEM, "out of memory");
        goto out;
    }
    json_object_object_add(m, "format", json_object_new_int(WS_ARCHIVE_FORMAT));
    archive_entry_linkresolver_set_strategy(x.links, ARCHIVE_FORMAT_TAR_PAX_INTERCHANGE);

    /* Physical walk (symlinks are entries, never followed), numeric ids
     * only (names mean nothing on the importing host), xattrs on; no
     * file flags or ACLs (FUSE has neither to give), and no crossing
     * into a mount below the root. */
    archive_read_disk_set_symlink_physical(x.disk);
    if (archive_read_disk_set_behavior(x.disk, ARCHIVE_READDISK_NO_TRAVERSE_MOUNTS | ARCHIVE_READDISK_NO_ACL |
                                                   ARCHIVE_READDISK_NO_FFLAGS) != ARCHIVE_OK) {
        r = archive_fail(&x, x.disk, "cannot set up the walk of", root);
        goto out;
    }

    /* Not padded to a 10 KiB block on a pipe: zeros after the zstd frame
     * would make the stream invalid for `zstd -t` and friends. */
    (void) archive_write_set_bytes_in_last_block(x.out, 1);
    if (archive_write_set_format_pax(x.out) != ARCHIVE_OK ||
        archive_write_add_filter_zstd(x.out) != ARCHIVE_OK || archive_write_open_fd(x.out, fd) != ARCHIVE_OK) {
        r = archive_fail(&x, x.out, "cannot start the archive", NULL);
        goto out;
    }
    if ((r = write_json_entry(&x, WS_ARCHIVE_WORKSPACE, m)) < 0)
        goto out;
    if ((r = walk(&x, root)) < 0)
        goto out;
    /* Nothing is left in the link resolver for tar: a first name was
     * written whole when seen (an inode whose other links lie outside
     * the tree is simply a file). */
    json_object_object_add(manifest, "format", json_object_new_int(WS_ARCHIVE_FORMAT));
    json_object_object_add(manifest, "entries", json_object_new_uint64(x.stats.entries));
    json_object_object_add(manifest, "files", json_object_get(x.files));
    json_object_object_add(manifest, "bytes", json_object_new_uint64(x.stats.bytes));
    json_object_object_add(manifest, "changed_during_export", json_object_new_uint64(x.stats.changed));
    if ((r = write_json_entry(&x, WS_ARCHIVE_MANIFEST, manifest)) < 0)
        goto out;
    if (archive_write_close(x.out) != ARCHIVE_OK) {
        r = archive_fail(&x, x.out, "cannot finish the archive", NULL);
        goto out;
    }
    if (ret_stats)
        *ret_stats = x.stats;
    r = 0;
out:
    if (ret_message)
        *ret_message = TAKE_PTR(x.message);
    free(x.message);
    free(x.buf);
    if (x.disk)
        archive_read_free(x.disk);
    if (x.out) {
        /* After a failure no end is written: the reader sees a damaged
         * stream, never one that looks whole. */
        if (r < 0)
            (void) archive_write_fail(x.out);
        archive_write_free(x.out);
    }
    archive_entry_linkresolver_free(x.links);
    json_object_put(x.files);
    json_object_put(manifest);
    json_object_put(m);
    return r;
}
