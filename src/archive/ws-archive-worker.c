/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The export worker's body (`layoutd --export-worker`, agent/daemon/agent-export.c
 * starts it): a process of its own, so it may block on the workspace's
 * mount as long as it takes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ws-archive.h"

int ws_archive_export_main(const char *root, const char *meta_json, int fd) {
    WsArchiveStats stats = {};
    _cleanup_free_ char *message = NULL;
    int r;
    json_object *meta = json_tokener_parse(meta_json);
    json_object *res = json_object_new_object();
    if (!json_object_is_type(meta, json_type_object) || !res) {
        fprintf(stderr, "export-worker: bad metadata\n");
        json_object_put(meta);
        json_object_put(res);
        return 2;
    }
    /* The kernel's dirty pages of the mount go to the daemon first. Linux
     * sends no FUSE_SYNCFS to a daemon like ours (only virtiofs gets one),
     * so this does not force the daemon's batch commit; it need not for
     * the archive's sake: every read below goes through the daemon, which
     * serves what its open batch holds as it serves the rest. */
    int mfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (mfd < 0 || syncfs(mfd) < 0) {
        r = -errno;
        if (asprintf(&message, "cannot %s %s: %s", mfd < 0 ? "open" : "syncfs", root, strerror(-r)) < 0)
            message = NULL;
    } else
        r = ws_archive_export(root, meta, fd, &stats, &message);
    if (mfd >= 0)
        close(mfd);
    (void) close(fd); /* the reader's end of stream comes with the result */
    json_object_object_add(res, "error", json_object_new_int(r));
    json_object_object_add(res, "message", message ? json_object_new_string(message) : NULL);
    json_object_object_add(res, "entries", json_object_new_uint64(stats.entries));
    json_object_object_add(res, "files", json_object_new_uint64(stats.files));
    json_object_object_add(res, "bytes", json_object_new_uint64(stats.bytes));
    json_object_object_add(res, "changed", json_object_new_uint64(stats.changed));
    json_object_object_add(res, "skipped", json_object_new_uint64(stats.skipped));
    printf("%s\n", json_object_to_json_string_ext(res, JSON_C_TO_STRING_PLAIN));
    if (r < 0 && message)
        fprintf(stderr, "export-worker: %s\n", message);
    json_object_put(res);
    json_object_put(meta);
    return r < 0 ? 1 : 0;
}
