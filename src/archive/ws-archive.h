/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A workspace as an archive (issue 23, export/import): a pax tar
 * compressed with zstd, written and read by libarchive (no tar by hand).
 *
 * Layout of the stream, in this order:
 *   .layoutd-export/workspace.json   the workspace's metadata (id, tenant,
 *                                    labels, quota_bytes, ...) and the
 *                                    format version: first, so that an
 *                                    importer can place the workspace
 *                                    before any file arrives;
 *   every entry below the exported directory (pax headers carry modes,
 *   owners, nanosecond times, symlink targets, hard links as links to the
 *   first name, and xattrs as SCHILY.xattr / LIBARCHIVE.xattr records);
 *   .layoutd-export/manifest.json    path -> {type, size, mode, sha256,
 *                                    link}: last, because its digests are
 *                                    of the bytes as they went into the
 *                                    archive, computed while streaming
 *                                    (one read of each file, no second
 *                                    pass). An archive without it is
 *                                    incomplete and is refused.
 *
 * Library code: returns 0 or -errno and a message, never prints.
 */

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "macro.h"

#define WS_ARCHIVE_DIR ".layoutd-export"
#define WS_ARCHIVE_WORKSPACE WS_ARCHIVE_DIR "/workspace.json"
#define WS_ARCHIVE_MANIFEST WS_ARCHIVE_DIR "/manifest.json"
#define WS_ARCHIVE_FORMAT 1
#define WS_ARCHIVE_CONTENT_TYPE "application/zstd"

typedef struct WsArchiveStats {
    uint64_t entries;      /* entries below the root (directories too) */
    uint64_t files;        /* regular files with data */
    uint64_t bytes;        /* their data */
    uint64_t changed;      /* export: files whose size changed while being read */
    uint64_t skipped;      /* export: sockets, which tar cannot hold */
} WsArchiveStats;

/*
 * Writes the archive of directory `root` to fd: `meta` (an object; a
 * reference is taken for the first entry, with "format" added), every
 * entry below root (root itself is not an entry: the importer's workspace
 * has its own), then the manifest. Does not cross mount points below
 * root. A file that shrinks while it is read is padded with zeros to the
 * size its header announced (the manifest's digest is of what was
 * written, so the archive stays self-consistent) and counted in
 * stats.changed; one that grows is cut at that size.
 * On failure *ret_message (malloc'ed, may be NULL) says why; what was
 * written is an archive without its end, which readers refuse.
 * Returns: <0 on error, 0 on success.
 */
int ws_archive_export(const char *root, json_object *meta, int fd, WsArchiveStats *ret_stats, char **ret_message);

/*
 * The export worker: syncfs(2) on root (a workspace's mount), then
 * ws_archive_export() of it with meta_json into fd (closed after), and
 * one JSON line on stdout: {"error", "message", "entries", "files",
 * "bytes", "changed"}. Returns the process's exit code (0, 1, 2: usage).
 */
int ws_archive_export_main(const char *root, const char *meta_json, int fd);

typedef struct WsArchiveReader WsArchiveReader;

/*
 * Opens an archive (path; "-" or NULL: stdin) and reads its first entry,
 * which must be the workspace metadata; *ret_meta is it (a new
 * reference). Returns: -EBADMSG (not ours, or damaged; message says
 * why), other <0, 0.
 */
int ws_archive_reader_open(const char *path, WsArchiveReader **ret, json_object **ret_meta, char **ret_message);
WsArchiveReader *ws_archive_reader_free(WsArchiveReader *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(WsArchiveReader *, ws_archive_reader_free)

/*
 * Extracts the rest of the archive into directory dest (which must exist):
 * modes, owners (numeric ids), times, xattrs, symlinks and hard links,
 * refusing names that are not canonical relative paths (absolute, "..",
 * ".", "//"), a name twice, paths through symlinks, and device nodes.
 * Stops at the first error. *ret_manifest is the manifest (a new
 * reference), checked by ws_archive_manifest_check() against the entries
 * the archive held: an archive that ends without one is -EBADMSG
 * (truncated), one whose manifest and entries differ either way too.
 * Returns: <0 on error (message says why), 0.
 */
int ws_archive_extract(WsArchiveReader *r, const char *dest, json_object **ret_manifest, WsArchiveStats *ret_stats,
                       char **ret_message);

/*
 * Checks dest against a manifest: every path exists with its type, mode
 * and size, files have their sha256 (read back through dest), symlinks
 * their target, hard links the inode of their first name. The manifest is
 * untrusted: it must pass ws_archive_manifest_check() first, and every
 * path is opened beneath dest with no symlink followed and no mount
 * crossed (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_XDEV),
 * so nothing outside dest is ever read, and no message shows anything
 * read outside it.
 * Returns: -EBADMSG on the first mismatch or a refused manifest (message
 * names the path and what differs), other <0, 0 with *ret_checked
 * (entries checked).
 */
int ws_archive_verify(const char *dest, json_object *manifest, uint64_t *ret_checked, char **ret_message);

/*
 * Is p a canonical relative path: not empty, not absolute, no empty, "."
 * or ".." component, no trailing '/', shorter than PATH_MAX. Only such
 * names enter or are read back from a workspace on import.
 */
bool ws_archive_path_is_canonical(const char *p);

/* An entry's name: a canonical path, or, for a directory (dir), one with
 * a single trailing '/', as exports write them. */
bool ws_archive_name_is_canonical(const char *p, bool dir);

/* Is p the archive's own directory (WS_ARCHIVE_DIR) or below it. */
bool ws_archive_path_is_reserved(const char *p);

/*
 * Checks an archive's manifest as untrusted input: format, an "entries"
 * count equal to the number of paths listed, every path canonical and not
 * reserved, every line typed (file: size and a 64-hex sha256; hardlink:
 * the canonical path of a listed file; symlink: a target string; mode
 * 0..07777). With names (an object whose keys are the entries the archive
 * held), the manifest and the archive must list the same paths, both
 * ways. Reads nothing from disk.
 * Returns: -EBADMSG (message says what is wrong), 0.
 */
int ws_archive_manifest_check(json_object *manifest, json_object *names, char **ret_message);
