/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * GET /v1/workspaces/{id}/export: a workspace as a tar+zstd stream
 * (src/archive/ws-archive.h for the format).
 *
 * The loop only decides: the archive is made by `layoutd --export-worker
 * MOUNT META` (this binary, fork + exec through src/engine/child.h), which
 * syncfs(2)es the workspace's mount, then walks it and writes the archive
 * into a pipe given as its fd 3. The API streams the pipe's read end to
 * the client without blocking (api_stream_set_fd); the worker's exit is
 * the stream's verdict (api_stream_end). A client that goes away kills
 * the worker.
 *
 * The files are read through the workspace's own FUSE mount, so the
 * daemon resolves pool stubs to their content: the archive holds real
 * bytes and needs no content pool on the other side.
 *
 * Consistency: nothing holds writers. The syncfs writes back the kernel's
 * dirty pages to the daemon first; then each file is read once, in walk
 * order. A file changed during the export is caught at whatever state it
 * had when read (a shrink is padded and flagged in the manifest); the
 * archive is a consistent snapshot only of a workspace nobody writes to
 * meanwhile (docs/operations.md, "Backup and restore").
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "agent.h"
#include "child.h"
#include "log.h"
#include "place-workspaces.h"
#include "util.h"
#include "ws-archive.h"

/* Room for a few zstd frames in flight: the worker is not stopped at
 * every 64 KiB while the loop gets round to the client. */
#define EXPORT_PIPE_SIZE (1024 * 1024)

static void json_putp(json_object **o) {
    json_object_put(*o);
}

typedef struct Export {
    Agent *agent;
    char *id;
    Child *child;
    ApiStream *stream;           /* NULL once ended or cancelled */
    char *result;                /* the worker's last stdout line */
    usec_t started;
} Export;

static Export *export_free(Export *x) {
    if (!x)
        return NULL;
    child_free(x->child);
    free(x->id);
    free(x->result);
    free(x);
    return NULL;
}

static void on_export_line(Child *c, const char *line, void *userdata) {
    Export *x = userdata;
    free(x->result);
    x->result = strdup(line);
}

static void on_export_exit(Child *c, int status, const char *stderr_text, void *userdata) {
    Export *x = userdata;
    json_object *res = x->result ? json_tokener_parse(x->result) : NULL, *v;
    const char *message = res && json_object_object_get_ex(res, "message", &v) ? json_object_get_string(v) : NULL;
    double took = (double) (now_usec(CLOCK_MONOTONIC) - x->started) / USEC_PER_SEC;
    json_object *ev = json_object_new_object();
    json_object_object_add(ev, "id", json_object_new_string(x->id));
    if (status == 0 && res) {
        uint64_t files = json_object_object_get_ex(res, "files", &v) ? json_object_get_uint64(v) : 0;
        uint64_t bytes = json_object_object_get_ex(res, "bytes", &v) ? json_object_get_uint64(v) : 0;
        uint64_t changed = json_object_object_get_ex(res, "changed", &v) ? json_object_get_uint64(v) : 0;
        log_info("export of workspace %s done in %.1fs: %" PRIu64 " files, %" PRIu64 " bytes%s", x->id, took, files,
                 bytes, changed ? " (some changed while read: see the manifest)" : "");
        json_object_object_add(ev, "files", json_object_new_uint64(files));
        json_object_object_add(ev, "bytes", json_object_new_uint64(bytes));
        json_object_object_add(ev, "changed_during_export", json_object_new_uint64(changed));
        agent_event(x->agent, "workspace.exported", ev);
        api_stream_end(x->stream, 0);
    } else {
        log_warning("export of workspace %s failed (worker exit %d): %s%s%s", x->id, status, message ?: "",
                    message && *stderr_text ? "; " : "", stderr_text);
        json_object_object_add(ev, "error", json_object_new_string(message ?: "the export worker failed"));
        agent_event(x->agent, "workspace.export_failed", ev);
        api_stream_end(x->stream, -EIO);
    }
    json_object_put(res);
    x->stream = NULL;
    export_free(x);
}

/* The client went away (or the agent stops) before the worker ended. */
static void on_export_cancel(void *userdata) {
    Export *x = userdata;
    log_info("export of workspace %s cancelled: the client went away", x->id);
    x->stream = NULL;
    export_free(x); /* kills the worker */
}

static json_object *export_meta(const WorkspaceRecord *w, bool has_cache) {
    json_object *o = json_object_new_object();
    char host[256] = "";
    (void) gethostname(host, sizeof host - 1);
    json_object_object_add(o, "id", json_object_new_string(w->id));
    json_object_object_add(o, "tenant", w->tenant ? json_object_new_string(w->tenant) : NULL);
    json_object_object_add(o, "quota_bytes", json_object_new_uint64(w->quota));
    json_object_object_add(o, "labels", agent_labels_json(w->labels));
    json_object_object_add(o, "created_at", json_object_new_int64((int64_t) (w->created_at / USEC_PER_SEC)));
    json_object_object_add(o, "exported_at",
                           json_object_new_int64((int64_t) (now_usec(CLOCK_REALTIME) / USEC_PER_SEC)));
    json_object_object_add(o, "exported_from", json_object_new_string(host));
    json_object_object_add(o, "agent_version", json_object_new_string(LAYOUTD_VERSION));
    /* Said in the archive itself: neither the cache's derived data nor
     * its mount point is in it, an import gets an empty cache, and the
     * tools make it again. */
    json_object_object_add(o, "cache_excluded", json_object_new_boolean(has_cache));
    return o;
}

int agent_export_handler(void *userdata, ApiCall *call) {
    Agent *a = userdata;
    WorkspaceRecord *w = place_workspace_get(agent_record(a), call->param);
    WorkspaceStatus st = {};
    int p[2] = { -EBADF, -EBADF }, r;
    if (!w || !w->active)
        return api_fail(&call->error, -ENOENT, API_CODE_NOT_FOUND, "no workspace '%s'", call->param);
    /* The files are read through the mount: only a serving daemon has one. */
    if (!a->supervisor || supervisor_get_status(a->supervisor, w->id, &st) < 0 || st.state != SUPERVISOR_RUNNING ||
        !w->mountpoint)
        return api_fail(&call->error, -EBUSY, API_CODE_CONFLICT,
                        "workspace '%s' is not serving (its daemon is %s): export reads through its mount",
                        w->id, a->supervisor ? supervisor_state_to_string(st.state) ?: "unknown" : "not supervised");

    _cleanup_(json_putp) json_object *meta = export_meta(w, st.cache_state != SUPERVISOR_CACHE_NONE);
    const char *meta_s = meta ? json_object_to_json_string_ext(meta, JSON_C_TO_STRING_PLAIN) : NULL;
    Export *x = calloc(1, sizeof(*x));
    if (!meta_s || !x || !(x->id = strdup(w->id))) {
        export_free(x);
        return -ENOMEM;
    }
    x->agent = a;
    if (pipe2(p, O_CLOEXEC) < 0) {
        r = -errno;
        export_free(x);
        return api_fail(&call->error, r, API_CODE_INTERNAL, "cannot make the export's pipe: %s", strerror(-r));
    }
    (void) fcntl(p[1], F_SETPIPE_SZ, EXPORT_PIPE_SIZE);
    char *argv[] = { (char *) AGENT_SELF_EXE, (char *) "--export-worker", w->mountpoint, (char *) meta_s, NULL };
    ChildCallbacks cb = { .on_line = on_export_line, .on_exit = on_export_exit };
    r = child_spawn_with_fd(a->event, argv, &cb, x, p[1], &x->child);
    p[1] = safe_close(p[1]); /* the worker's now: its exit is the pipe's end */
    if (r < 0) {
        safe_close(p[0]);
        export_free(x);
        return api_fail(&call->error, r, API_CODE_INTERNAL, "cannot start the export worker: %s", strerror(-r));
    }
    child_close_input(x->child);
    char filename[LAYOUT_WORKSPACE_ID_MAX + 16];
    snprintf(filename, sizeof filename, "%s.tar.zst", w->id);
    r = api_stream_set_fd(call->stream, p[0], WS_ARCHIVE_CONTENT_TYPE, filename);
    if (r < 0) {
        safe_close(p[0]);
        export_free(x);
        return r;
    }
    x->stream = call->stream;
    x->started = now_usec(CLOCK_MONOTONIC);
    api_stream_set_cancel(call->stream, on_export_cancel, x);
    log_info("export of workspace %s started (pid %d)", w->id, (int) child_pid(x->child));
    return 0;
}

/* ---- the worker ------------------------------------------------------------ */

int agent_export_worker_main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: layoutd --export-worker MOUNT META-JSON (archive on fd 3)\n");
        return 2;
    }
    return ws_archive_export_main(argv[2], argv[3], 3);
}
