/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The worker's side (worker.h): `layoutd --worker`. One request on stdin,
 * the engine on a detached copy of the agent's layout and record, record
 * changes handed to the agent (and waited for) through the proxy store,
 * progress and the result on stdout.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "engine.h"
#include "place-workspaces.h"
#include "quota.h"
#include "util.h"
#include "worker.h"

/* Reads one line from fd 0, however long. Returns -EIO/-ENOMEM, 0 (EOF
 * before a newline is -EPIPE). */
static int read_line(char **ret) {
    _cleanup_free_ char *buf = NULL;
    size_t len = 0, size = 0;
    for (;;) {
        if (size - len < 4096) {
            size_t want = MAX(size * 2, len + 65536);
            char *t = realloc(buf, want);
            if (!t)
                return -ENOMEM;
            buf = t;
            size = want;
        }
        /* Byte by byte would be slow for a record of thousands of entries;
         * whole reads are fine because the agent never sends ahead: after
         * the request it only answers (one line per question). */
        ssize_t n = read(STDIN_FILENO, buf + len, size - len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return -EPIPE;
        len += (size_t) n;
        char *nl = memchr(buf, '\n', len);
        if (nl) {
            *nl = 0;
            *ret = TAKE_PTR(buf);
            return 0;
        }
    }
}

static int write_json(json_object *o) {
    size_t len;
    const char *s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    if (!s)
        return -ENOMEM;
    if (fwrite(s, 1, len, stdout) != len || fputc('\n', stdout) == EOF || fflush(stdout) != 0)
        return -EIO;
    return 0;
}

/* ---- the proxy store: every save goes to the agent and waits ---------- */

static int proxy_save(RecordStore *store, StateRecord *record, const char *volume) {
    json_object *msg = json_object_new_object(), *v = NULL;
    int r;
    if (!msg)
        return -ENOMEM;
    VolumeRecord *rec = state_record_find_volume(record, volume);
    if (rec && (r = volume_record_to_json(rec, &v)) < 0) {
        json_object_put(msg);
        return r;
    }
    json_object_object_add(msg, "type", json_object_new_string("save"));
    json_object_object_add(msg, "name", json_object_new_string(volume));
    json_object_object_add(msg, "volume", v);
    r = write_json(msg);
    json_object_put(msg);
    if (r < 0)
        return r;
    _cleanup_free_ char *line = NULL;
    r = read_line(&line);
    if (r < 0)
        return r;
    json_object *ack = json_tokener_parse(line), *e;
    if (!ack)
        return -EBADMSG;
    r = json_object_object_get_ex(ack, "error", &e) ? json_object_get_int(e) : -EBADMSG;
    json_object_put(ack);
    return r < 0 ? r : 0;
}

static RecordStore proxy_store = { .save = proxy_save };

static void progress(void *userdata, const char *volume, const ApplyStepResult *step, bool done) {
    json_object *msg = json_object_new_object();
    if (!msg)
        return;
    json_object_object_add(msg, "type", json_object_new_string("progress"));
    json_object_object_add(msg, "volume", json_object_new_string(volume));
    json_object_object_add(msg, "step", json_object_new_string(plan_step_kind_to_string(step->kind) ?: "?"));
    json_object_object_add(msg, "description", json_object_new_string(step->description ?: ""));
    json_object_object_add(msg, "done", json_object_new_boolean(done));
    json_object_object_add(msg, "changed", json_object_new_boolean(step->changed));
    json_object_object_add(msg, "error", json_object_new_int(step->error));
    json_object_object_add(msg, "message", step->message ? json_object_new_string(step->message) : NULL);
    (void) write_json(msg);
    json_object_put(msg);
}

/* ---- the operations ---------------------------------------------------- */

typedef struct WorkerRun {
    Engine *engine;
    json_object *args;
    ApplyResult *result;
    json_object *extra;
    char *message;
    bool observation;     /* send e->observation with the result */
} WorkerRun;

static const char *arg_str(json_object *args, const char *k) {
    json_object *v;
    return json_object_object_get_ex(args, k, &v) && json_object_is_type(v, json_type_string)
                   ? json_object_get_string(v)
                   : NULL;
}

static int op_observe(WorkerRun *w) {
    w->observation = true;
    return engine_observe(w->engine);
}

static int op_apply(WorkerRun *w) {
    w->observation = true;
    return engine_apply(w->engine, arg_str(w->args, "only"), &w->result);
}

static int op_carve(WorkerRun *w) {
    json_object *v;
    PoolRole role = pool_role_from_string(arg_str(w->args, "role"));
    if ((int) role < 0 || !json_object_object_get_ex(w->args, "index", &v))
        return -EINVAL;
    _cleanup_free_ char *name = NULL;
    w->observation = true;
    int r = engine_carve(w->engine, role, (unsigned) json_object_get_int(v), &w->result, &name);
    if (r >= 0 && (w->extra = json_object_new_object()))
        json_object_object_add(w->extra, "volume", json_object_new_string(name));
    return r;
}

static int op_grow(WorkerRun *w) {
    json_object *v;
    const char *volume = arg_str(w->args, "volume");
    if (!volume || !json_object_object_get_ex(w->args, "size", &v))
        return -EINVAL;
    w->observation = true;
    return engine_grow(w->engine, volume, json_object_get_uint64(v), &w->result);
}

#define PROBE_FILE ".layoutd-flush-probe"

/* The flush probe of one volume: a fresh 4 KiB file, written and fsynced,
 * then removed. A fresh file needs new blocks and inodes, so a full or
 * read-only volume fails here as it fails for its workspaces (ENOSPC,
 * EROFS), where rewriting a file in place would still succeed. */
static int probe_one(const char *dir, usec_t *ret_usec) {
    static char block[4096];
    _cleanup_free_ char *p = NULL;
    memset(block, 0xa5, sizeof block);
    if (asprintf(&p, "%s/%s", dir, PROBE_FILE) < 0)
        return -ENOMEM;
    (void) unlink(p); /* a probe killed mid-way left it */
    usec_t t0 = now_usec(CLOCK_MONOTONIC);
    int r = 0;
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -errno;
    ssize_t n = write(fd, block, sizeof block);
    if (n != (ssize_t) sizeof block)
        r = n < 0 ? -errno : -ENOSPC;
    else if (fsync(fd) < 0)
        r = -errno;
    *ret_usec = now_usec(CLOCK_MONOTONIC) - t0;
    close(fd);
    (void) unlink(p);
    return r;
}

/* statvfs of dir as the fields of VolumeObservation are named, into e
 * ("error": errno or 0). Returns what observe_statvfs returned. */
static int statfs_json(const char *dir, json_object *e, VolumeObservation *ret) {
    VolumeObservation o = { .mount_path = (char *) dir };
    int r = dir ? observe_statvfs(&o) : -EINVAL;
    json_object_object_add(e, "statfs_error", json_object_new_int(r < 0 ? -r : 0));
    if (r >= 0) {
        json_object_object_add(e, "fs_size", json_object_new_uint64(o.fs_size));
        json_object_object_add(e, "fs_used", json_object_new_uint64(o.fs_used));
        json_object_object_add(e, "fs_avail", json_object_new_uint64(o.fs_avail));
        json_object_object_add(e, "fs_inodes", json_object_new_uint64(o.fs_inodes));
        json_object_object_add(e, "fs_inodes_free", json_object_new_uint64(o.fs_inodes_free));
        json_object_object_add(e, "fs_read_only", json_object_new_boolean(o.fs_read_only));
    }
    if (ret) {
        *ret = o;
        ret->mount_path = NULL;
        ret->statvfs_error = r < 0 ? -r : 0;
    }
    return r;
}

/* A small text file, whole (at most max bytes). Returns -errno, 0. */
static int read_small_file(const char *path, size_t max, char **ret) {
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    _cleanup_free_ char *buf = malloc(max + 1);
    if (!buf)
        return -ENOMEM;
    size_t len = 0;
    for (;;) {
        ssize_t n = read(fd, buf + len, max - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            break;
        len += (size_t) n;
        if (len == max)
            return -EFBIG;
    }
    buf[len] = 0;
    *ret = TAKE_PTR(buf);
    return 0;
}

static int op_probe(WorkerRun *w) {
    json_object *paths;
    if (!json_object_object_get_ex(w->args, "paths", &paths) || !json_object_is_type(paths, json_type_array))
        return -EINVAL;
    json_object *out = json_object_new_array();
    if (!out)
        return -ENOMEM;
    for (size_t i = 0; i < json_object_array_length(paths); i++) {
        const char *dir = json_object_get_string(json_object_array_get_idx(paths, i));
        usec_t us = 0;
        int r = dir ? probe_one(dir, &us) : -EINVAL;
        json_object *o = json_object_new_object();
        json_object_object_add(o, "path", json_object_new_string(dir ?: ""));
        json_object_object_add(o, "usec", json_object_new_uint64(us));
        json_object_object_add(o, "error", json_object_new_int(r < 0 ? -r : 0));
        /* The figures with the probe: every probe interval the agent knows
         * how full each volume is, whatever its observation's age. */
        (void) statfs_json(dir, o, NULL);
        json_object_array_add(out, o);
    }
    if (!(w->extra = json_object_new_object())) {
        json_object_put(out);
        return -ENOMEM;
    }
    json_object_object_add(w->extra, "probes", out);
    /* The daemons' own counters (their --stats-file / LAYOUTD_STATS_FILE):
     * small files on the host, read here with the probe so that the loop
     * reads no file a daemon writes. What the agent acts on: objects a
     * workspace references and the pool does not have. */
    json_object *stats, *daemons = json_object_new_array();
    if (daemons && json_object_object_get_ex(w->args, "stats", &stats) && json_object_is_type(stats, json_type_array))
        for (size_t i = 0; i < json_object_array_length(stats); i++) {
            json_object *s = json_object_array_get_idx(stats, i);
            const char *id = arg_str(s, "id"), *path = arg_str(s, "path");
            json_object *o = json_object_new_object(), *file = NULL, *v;
            if (!id || !path || !o) {
                json_object_put(o);
                continue;
            }
            json_object_object_add(o, "id", json_object_new_string(id));
            _cleanup_free_ char *text = NULL;
            int r = read_small_file(path, 1024 * 1024, &text);
            if (r >= 0)
                file = json_tokener_parse(text);
            if (!file || !json_object_is_type(file, json_type_object))
                json_object_object_add(o, "error", json_object_new_int(r < 0 ? -r : EBADMSG));
            else {
                static const char *const keys[] = { "objects_missing", "missing_eio", "missing_objects", "cas_errors",
                                                    "pool_share_bytes", "pool_bytes", NULL };
                for (const char *const *k = keys; *k; k++)
                    if (json_object_object_get_ex(file, *k, &v))
                        json_object_object_add(o, *k, json_object_get(v));
            }
            json_object_put(file);
            json_object_array_add(daemons, o);
        }
    json_object_object_add(w->extra, "daemons", daemons);
    /* Each workspace's project quota, read with the probe for the same
     * reason: quotactl may read the quota file's blocks on a busy volume. */
    json_object *qs, *quotas = json_object_new_array();
    if (quotas && json_object_object_get_ex(w->args, "quotas", &qs) && json_object_is_type(qs, json_type_array))
        for (size_t i = 0; i < json_object_array_length(qs); i++) {
            json_object *q = json_object_array_get_idx(qs, i), *v;
            const char *id = arg_str(q, "id"), *mount = arg_str(q, "mount");
            uint32_t project = json_object_object_get_ex(q, "project", &v) ? (uint32_t) json_object_get_uint64(v) : 0;
            json_object *o = json_object_new_object();
            if (!id || !mount || !project || !o) {
                json_object_put(o);
                continue;
            }
            json_object_object_add(o, "id", json_object_new_string(id));
            QuotaUsage u = {};
            _cleanup_close_ int fd = open(mount, O_PATH | O_DIRECTORY | O_CLOEXEC);
            int r = fd < 0 ? -errno : quota_project_enforced(fd);
            if (r > 0)
                r = quota_get(fd, project, &u);
            else if (r == 0)
                r = -EOPNOTSUPP;
            if (r < 0)
                json_object_object_add(o, "error", json_object_new_int(-r));
            else {
                json_object_object_add(o, "limit_bytes", json_object_new_uint64(u.limit_bytes));
                json_object_object_add(o, "used_bytes", json_object_new_uint64(u.used_bytes));
                json_object_object_add(o, "limit_inodes", json_object_new_uint64(u.limit_inodes));
                json_object_object_add(o, "used_inodes", json_object_new_uint64(u.used_inodes));
            }
            json_object_array_add(quotas, o);
        }
    json_object_object_add(w->extra, "quotas", quotas);
    return 0;
}

/* A workspace's quota limit changed online: quotactl commits a
 * transaction on the state volume, so off the loop. */
static int op_quota(WorkerRun *w) {
    const char *mount = arg_str(w->args, "mount");
    json_object *v;
    uint32_t project = json_object_object_get_ex(w->args, "project", &v) ? (uint32_t) json_object_get_uint64(v) : 0;
    uint64_t limit = json_object_object_get_ex(w->args, "limit", &v) ? json_object_get_uint64(v) : 0;
    if (!mount || !project)
        return -EINVAL;
    _cleanup_close_ int fd = open(mount, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int r = quota_project_enforced(fd);
    if (r == 0) {
        w->message = strdup("the volume does not enforce project quotas (mounted without prjquota)");
        return -EOPNOTSUPP;
    }
    if (r < 0)
        return r;
    return quota_set_limit(fd, project, limit, 0);
}

/* The capacity watch: statvfs of each path every interval, sent as a
 * sample when a figure moved (or every few seconds, so the agent knows the
 * watch is alive), until the agent closes our stdin. statvfs of a local
 * filesystem reads in-memory counters: this costs next to nothing, which
 * is why it can run four times a second while a volume nears a threshold. */
static int op_watch(WorkerRun *w) {
    json_object *paths, *v;
    if (!json_object_object_get_ex(w->args, "paths", &paths) || !json_object_is_type(paths, json_type_array))
        return -EINVAL;
    unsigned interval = json_object_object_get_ex(w->args, "interval_ms", &v) ? (unsigned) json_object_get_int(v) : 250;
    interval = CLAMP(interval, 50u, 10000u);
    size_t n = json_object_array_length(paths);
    _cleanup_free_ VolumeObservation *last = calloc(MAX(n, 1u), sizeof(VolumeObservation));
    if (!last)
        return -ENOMEM;
    usec_t last_sent = 0;
    for (;;) {
        json_object *out = json_object_new_array();
        bool moved = false;
        for (size_t i = 0; i < n; i++) {
            const char *dir = json_object_get_string(json_object_array_get_idx(paths, i));
            json_object *e = json_object_new_object();
            VolumeObservation o;
            json_object_object_add(e, "path", json_object_new_string(dir ?: ""));
            (void) statfs_json(dir, e, &o);
            moved = moved || o.fs_used != last[i].fs_used || o.fs_inodes_free != last[i].fs_inodes_free ||
                    o.fs_size != last[i].fs_size || o.fs_read_only != last[i].fs_read_only ||
                    o.statvfs_error != last[i].statvfs_error;
            last[i] = o;
            json_object_array_add(out, e);
        }
        usec_t now = now_usec(CLOCK_MONOTONIC);
        int r = 0;
        if (moved || now - last_sent >= 5 * USEC_PER_SEC) {
            json_object *msg = json_object_new_object();
            json_object_object_add(msg, "type", json_object_new_string("sample"));
            json_object_object_add(msg, "statfs", json_object_get(out));
            r = write_json(msg);
            json_object_put(msg);
            last_sent = now;
        }
        json_object_put(out);
        if (r < 0)
            return 0; /* the agent went away */
        struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
        int k = poll(&pfd, 1, (int) interval);
        if (k < 0 && errno != EINTR)
            return -errno;
        if (k > 0) {
            char c;
            ssize_t got = read(STDIN_FILENO, &c, 1);
            if (got <= 0)
                return 0; /* stdin closed: the watch is over */
        }
    }
}

static int op_rmtree(WorkerRun *w) {
    const char *dir = arg_str(w->args, "dir"), *name = arg_str(w->args, "name");
    if (!dir || !name || strchr(name, '/') || streq(name, ".") || streq(name, ".."))
        return -EINVAL;
    _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    int r = place_rmtree_at(fd, name);
    if (r < 0 && asprintf(&w->message, "deleting %s/%s failed: %s%s", dir, name, strerror(-r),
                          r == -EXDEV ? " (something is mounted inside it; unmount it first)" : "") < 0)
        w->message = NULL;
    return r;
}

static bool arg_bool(json_object *args, const char *k) {
    json_object *v;
    return json_object_object_get_ex(args, k, &v) && json_object_get_boolean(v);
}

/* A workspace's state directory, made off the agent's loop: it is on a
 * state volume, whose journal can keep a mkdir waiting through a flush
 * storm. */
static int op_workspace_dir(WorkerRun *w) {
    const char *volume = arg_str(w->args, "volume"), *id = arg_str(w->args, "id");
    PlaceError pe = {};
    bool created = false;
    if (!volume || !id)
        return -EINVAL;
    json_object *v;
    /* Always set the limit, 0 included: a project id may be one a
     * destroyed workspace had, and XFS keeps a project's limit. */
    PlaceQuota q = { .clear_limit = true };
    if (json_object_object_get_ex(w->args, "project_id", &v))
        q.project_id = (uint32_t) json_object_get_uint64(v);
    if (json_object_object_get_ex(w->args, "quota", &v))
        q.limit_bytes = json_object_get_uint64(v);
    int r = place_workspace_make_dir(w->engine->layout, volume, id, arg_bool(w->args, "reclaim"), &q, &created, &pe);
    if (r < 0) {
        w->message = TAKE_PTR(pe.message);
        return r;
    }
    w->extra = json_object_new_object();
    if (!w->extra)
        return -ENOMEM;
    json_object_object_add(w->extra, "created", json_object_new_boolean(created));
    return 0;
}

/* The reconcile of the record with the directories on the state volumes,
 * off the loop for the same reason. The worker works on its copy; the
 * agent adds what it adopted to its own record. */
static int op_reconcile(WorkerRun *w) {
    PlaceContext ctx = { .layout = w->engine->layout, .record = w->engine->record };
    PlaceReconcileReport rep = {};
    int r = place_reconcile(&ctx, &rep);
    if (r < 0)
        return r;
    json_object *items = json_object_new_array(), *adopted = json_object_new_array();
    w->extra = json_object_new_object();
    if (!items || !adopted || !w->extra) {
        json_object_put(items);
        json_object_put(adopted);
        place_reconcile_report_done(&rep);
        return -ENOMEM;
    }
    for (size_t i = 0; i < rep.n_items; i++) {
        const PlaceReconcileItem *it = &rep.items[i];
        json_object *o = json_object_new_object();
        json_object_object_add(o, "kind", json_object_new_string(place_reconcile_kind_to_string(it->kind)));
        json_object_object_add(o, "volume", it->volume ? json_object_new_string(it->volume) : NULL);
        json_object_object_add(o, "name", it->name ? json_object_new_string(it->name) : NULL);
        json_object_object_add(o, "path", it->path ? json_object_new_string(it->path) : NULL);
        json_object_array_add(items, o);
        const WorkspaceRecord *ws = it->kind == PLACE_RECONCILE_ADOPTED && it->name
                                        ? state_record_find_workspace(w->engine->record, it->name)
                                        : NULL;
        if (ws) {
            json_object *a = json_object_new_object();
            json_object_object_add(a, "id", json_object_new_string(ws->id));
            json_object_object_add(a, "volume", json_object_new_string(ws->volume));
            json_object_object_add(a, "state_dir", json_object_new_string(ws->state_dir));
            json_object_object_add(a, "mountpoint", ws->mountpoint ? json_object_new_string(ws->mountpoint) : NULL);
            json_object_array_add(adopted, a);
        }
    }
    place_reconcile_report_done(&rep);
    json_object_object_add(w->extra, "items", items);
    json_object_object_add(w->extra, "adopted", adopted);
    return 0;
}

static int op_reclaim(WorkerRun *w) {
    const char *volume = arg_str(w->args, "volume");
    if (!volume)
        return -EINVAL;
    return engine_reclaim(w->engine, volume, &w->result, &w->message);
}

static const struct {
    const char *name;
    int (*run)(WorkerRun *w);
} operations[] = {
    { WORKER_OP_OBSERVE, op_observe }, { WORKER_OP_APPLY, op_apply }, { WORKER_OP_CARVE, op_carve },
    { WORKER_OP_GROW, op_grow },       { WORKER_OP_PROBE, op_probe }, { WORKER_OP_RMTREE, op_rmtree },
    { WORKER_OP_WATCH, op_watch },     { WORKER_OP_WORKSPACE_DIR, op_workspace_dir },
    { WORKER_OP_QUOTA, op_quota },
    { WORKER_OP_RECONCILE, op_reconcile }, { WORKER_OP_RECLAIM, op_reclaim },
};

static int answer(int error, WorkerRun *w) {
    json_object *msg = json_object_new_object(), *j;
    if (!msg)
        return 1;
    json_object_object_add(msg, "type", json_object_new_string("result"));
    json_object_object_add(msg, "error", json_object_new_int(error < 0 ? error : 0));
    json_object_object_add(msg, "message", w->message || error < 0
                                               ? json_object_new_string(w->message ?: strerror(-error))
                                               : NULL);
    if (w->result && apply_result_to_json(w->result, &j) >= 0)
        json_object_object_add(msg, "result", j);
    if (w->observation && w->engine && w->engine->observation && observation_to_json(w->engine->observation, &j) >= 0)
        json_object_object_add(msg, "observation", j);
    if (w->extra)
        json_object_object_add(msg, "extra", json_object_get(w->extra));
    int r = write_json(msg);
    json_object_put(msg);
    return r < 0 ? 1 : 0;
}

int worker_main(void) {
    _cleanup_free_ char *line = NULL;
    WorkerRun w = {};
    Layout *layout = NULL;
    StateRecord *record = NULL;
    LayoutErrors errors = {};
    json_object *req = NULL, *v;
    int r, code;

    r = read_line(&line);
    if (r < 0) {
        fprintf(stderr, "layoutd --worker: no request on stdin: %s\n", strerror(-r));
        return 2;
    }
    req = json_tokener_parse(line);
    const char *op = req ? arg_str(req, "op") : NULL, *yaml = req ? arg_str(req, "layout") : NULL;
    if (!op || !yaml || !json_object_object_get_ex(req, "record", &v)) {
        fprintf(stderr, "layoutd --worker: malformed request\n");
        json_object_put(req);
        return 2;
    }
    const char *source = arg_str(req, "layout_source");
    r = layout_parse_string(yaml, strlen(yaml), source ?: "<agent>", &layout, &errors);
    layout_errors_clear(&errors);
    if (r >= 0 && source) {
        free(layout->source);
        layout->source = strdup(source);
    }
    if (r >= 0)
        r = state_record_from_json_string(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN), &record);
    if (r >= 0)
        r = engine_new_detached(TAKE_PTR(layout), TAKE_PTR(record), &proxy_store, &w.engine);
    layout_free(layout);
    state_record_free(record);
    if (r >= 0) {
        w.engine->progress = progress;
        if (!json_object_object_get_ex(req, "args", &w.args))
            w.args = NULL;
        r = -EOPNOTSUPP;
        for (size_t i = 0; i < ELEMENTSOF(operations); i++)
            if (streq(operations[i].name, op)) {
                r = operations[i].run(&w);
                break;
            }
    }
    code = answer(r, &w);
    apply_result_free(w.result);
    json_object_put(w.extra);
    free(w.message);
    engine_free(w.engine);
    json_object_put(req);
    return code;
}
