/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "engine.h"
#include "host-check.h"
#include "place-workspaces.h"
#include "util.h"

static char *format_layout_errors(const LayoutErrors *errors, const char *path, int r) {
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f)
        return NULL;
    for (size_t i = 0; i < errors->n; i++) {
        const LayoutError *e = &errors->items[i];
        if (e->line > 0)
            fprintf(f, "%s%s:%u:%u: %s", i ? "\n" : "", e->file, e->line, e->column, e->message);
        else
            fprintf(f, "%s%s: %s", i ? "\n" : "", e->file ? e->file : path ?: "layout", e->message);
    }
    if (errors->n == 0)
        fprintf(f, "%s: cannot load the layout: %s", path ?: "layout", strerror(-r));
    fclose(f);
    return text;
}

int engine_load_layout(const char *path, const char *root, Layout **ret, char **ret_path, char **ret_error) {
    LayoutErrors errors = {};
    _cleanup_free_ char *file = NULL;
    _cleanup_(layout_freep) Layout *l = NULL;
    struct stat st;
    int r;

    if (!path)
        path = ENGINE_DEFAULT_LAYOUT_DIR;
    if (stat(path, &st) < 0) {
        r = -errno;
        if (ret_error && asprintf(ret_error, "%s: %s", path, strerror(-r)) < 0)
            *ret_error = NULL;
        return r;
    }
    if (S_ISDIR(st.st_mode)) {
        r = layout_find_in_dir(path, &file, &errors);
        if (r < 0)
            goto fail;
    } else if (!(file = strdup(path)))
        return -ENOMEM;

    r = layout_parse_file(file, &l, &errors);
    if (r < 0)
        goto fail;
    if (root) {
        const char *why = layout_path_why_unsafe(root);
        r = why ? -EINVAL : layout_set_root(l, root);
        if (r < 0) {
            if (ret_error && asprintf(ret_error, "--root %s: %s", root, why ?: "it must be absolute") < 0)
                *ret_error = NULL;
            return r;
        }
    }
    r = engine_check_host(l, file, &errors);
    if (r > 0)
        r = -EINVAL;
    if (r < 0)
        goto fail;
    *ret = TAKE_PTR(l);
    if (ret_path)
        *ret_path = TAKE_PTR(file);
    return 0;
fail:
    if (ret_error)
        *ret_error = format_layout_errors(&errors, file ?: path, r);
    layout_errors_clear(&errors);
    return r < 0 ? r : -EINVAL;
}

static Engine *engine_alloc(void) {
    Engine *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->lock_fd = -EBADF;
    record_file_store_init(&e->file_store, NULL);
    e->store = &e->file_store.store;
    return e;
}

_printf_(2, 3) static int set_error(char **ret_error, const char *fmt, ...) {
    if (!ret_error)
        return 0;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(ret_error, fmt, ap) < 0)
        *ret_error = NULL;
    va_end(ap);
    return 0;
}

/* The pid holding the flock on fd: the kernel's word first (/proc/locks
 * names the holder of every lock by device and inode), else what the
 * holder wrote into the file. Returns the pid, or 0 when unknown. */
static pid_t lock_holder(int fd) {
    struct stat st;
    if (fstat(fd, &st) < 0)
        return 0;
    _cleanup_free_ char *locks = NULL;
    if (read_full_file("/proc/locks", &locks, NULL) >= 0)
        for (char *l = locks; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
            /* "1: FLOCK  ADVISORY  WRITE 1234 08:01:123456 0 EOF" */
            char type[16];
            int pid;
            unsigned maj, min;
            unsigned long ino;
            if (sscanf(l, "%*d: %15s %*s %*s %d %x:%x:%lu", type, &pid, &maj, &min, &ino) == 5 &&
                streq(type, "FLOCK") && pid > 0 && ino == st.st_ino && makedev(maj, min) == st.st_dev)
                return (pid_t) pid;
        }
    char buf[32] = "";
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    int pid = 0;
    if (n > 0 && sscanf(buf, "%d", &pid) == 1 && pid > 0)
        return (pid_t) pid;
    return 0;
}

int engine_open(const EngineOptions *o, Engine **ret, char **ret_error) {
    _cleanup_(engine_freep) Engine *e = engine_alloc();
    int r;
    if (!e)
        return -ENOMEM;

    r = engine_load_layout(o->layout_path, o->root, &e->layout, &e->layout_path, ret_error);
    if (r < 0)
        return r;
    r = layout_hash(e->layout, &e->layout_hash);
    if (r < 0)
        return r;
    if (o->create_root) {
        r = mkdir_p(e->layout->root, 0755);
        if (r < 0)
            return set_error(ret_error, "cannot create root %s: %s", e->layout->root, strerror(-r)), r;
    }
    if (o->lock) {
        /* One engine per root at a time: the agent and layoutctl's changing
         * verbs take the same lock, so two applies never race on one
         * volume, and a second agent on this root is refused instead of
         * fighting over the volumes. */
        _cleanup_free_ char *lock = NULL;
        if (asprintf(&lock, "%s/layoutd-state.lock", streq(e->layout->root, "/") ? "" : e->layout->root) < 0)
            return -ENOMEM;
        e->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (e->lock_fd < 0) {
            r = -errno;
            return set_error(ret_error, "cannot open %s: %s", lock, strerror(-r)), r;
        }
        if (flock(e->lock_fd, LOCK_EX | LOCK_NB) < 0) {
            r = -errno;
            if (r != -EWOULDBLOCK)
                return set_error(ret_error, "cannot lock %s: %s", lock, strerror(-r)), r;
            pid_t holder = lock_holder(e->lock_fd);
            _cleanup_free_ char *comm = NULL, *comm_path = NULL;
            if (holder > 0 && asprintf(&comm_path, "/proc/%d/comm", (int) holder) >= 0)
                (void) read_one_line_file(comm_path, &comm);
            if (holder <= 0)
                return set_error(ret_error,
                                 "%s is locked: another layoutd or a layoutctl apply/repair/teardown works on %s "
                                 "(`lslocks | grep layoutd-state` names it)",
                                 lock, e->layout->root),
                       r;
            return set_error(ret_error,
                             "%s is locked by %s (pid %d), which works on %s: %s", lock, comm ?: "a process",
                             (int) holder, e->layout->root,
                             streq_ptr(comm, "layoutd")
                                 ? "stop the agent first (`systemctl stop layoutd`; SIGUSR2 stops it and "
                                   "leaves the workspaces serving)"
                                 : "wait for it to end"),
                   r;
        }
        /* Who holds it, for the next one who finds it locked (and for
         * people: `cat` names the holder). Only a hint: /proc/locks is
         * the truth, and a stale pid is never read while nobody holds it. */
        char pidbuf[32];
        int k = snprintf(pidbuf, sizeof pidbuf, "%d\n", (int) getpid());
        if (ftruncate(e->lock_fd, 0) >= 0)
            (void) !pwrite(e->lock_fd, pidbuf, (size_t) k, 0); /* not fatal: the lock is what matters */
    }
    r = layout_record_path(e->layout, &e->record_path);
    if (r < 0)
        return r;
    r = state_record_load(e->record_path, &e->record);
    if (r == -EBADMSG)
        return set_error(ret_error, "the record %s is corrupt; refusing to work on it (nothing changed)",
                         e->record_path),
               r;
    if (r == -EPROTONOSUPPORT)
        return set_error(ret_error, "the record %s was written by a newer layoutd; refusing to touch it",
                         e->record_path),
               r;
    if (r < 0)
        return set_error(ret_error, "cannot load the record %s: %s", e->record_path, strerror(-r)), r;
    record_file_store_init(&e->file_store, e->record_path);
    *ret = TAKE_PTR(e);
    return 0;
}

int engine_new_detached(Layout *layout, StateRecord *record, RecordStore *store, Engine **ret) {
    _cleanup_(layout_freep) Layout *l = layout;
    _cleanup_(state_record_freep) StateRecord *rec = record;
    Engine *e = engine_alloc();
    if (!e)
        return -ENOMEM;
    e->layout = TAKE_PTR(l);
    e->record = TAKE_PTR(rec);
    if (store)
        e->store = store;
    *ret = e;
    return 0;
}

Engine *engine_free(Engine *e) {
    if (!e)
        return NULL;
    observation_free(e->observation);
    state_record_free(e->record);
    layout_free(e->layout);
    free(e->layout_path);
    free(e->layout_hash);
    free(e->record_path);
    safe_close(e->lock_fd);
    free(e);
    return NULL;
}

static int observe_with(Engine *e, const Layout *l) {
    Observation *o = NULL;
    int r = volumes_observe(l, e->record, &o);
    if (r < 0)
        return r;
    observation_free(e->observation);
    e->observation = o;
    return 0;
}

int engine_observe(Engine *e) {
    return observe_with(e, e->layout);
}

int engine_plan(Engine *e, Plan **ret) {
    if (!e->observation) {
        int r = engine_observe(e);
        if (r < 0)
            return r;
    }
    return volumes_plan(e->layout, e->record, e->observation, ret);
}

static VolumesContext context_of(Engine *e, const Layout *l) {
    return (VolumesContext) {
        .layout = l,
        .record = e->record,
        .store = e->store,
        .progress = e->progress,
        .userdata = e->progress_userdata,
    };
}

/* observe -> plan (cut to `only`) -> apply -> observe, on layout l. */
static int apply_with(Engine *e, const Layout *l, const char *only, ApplyResult **ret) {
    _cleanup_(plan_freep) Plan *plan = NULL;
    int r = observe_with(e, l);
    if (r < 0)
        return r;
    r = volumes_plan(l, e->record, e->observation, &plan);
    if (r < 0)
        return r;
    if (only)
        plan_keep_volume(plan, only);
    VolumesContext c = context_of(e, l);
    r = volumes_apply(&c, plan, only ? NULL : e->observation, ret);
    if (r < 0)
        return r;
    /* What the apply made is what the next reader should see. */
    (void) observe_with(e, e->layout);
    return 0;
}

int engine_apply(Engine *e, const char *only, ApplyResult **ret) {
    return apply_with(e, e->layout, only, ret);
}

void engine_layout_with_volume(const Layout *l, PoolRole role, unsigned index, Layout *ret) {
    *ret = *l;
    ret->pools[role].min_volumes = MAX(ret->pools[role].min_volumes, index + 1);
}

int engine_carve(Engine *e, PoolRole role, unsigned index, ApplyResult **ret, char **ret_name) {
    _cleanup_free_ char *name = NULL;
    const Pool *p = layout_pool(e->layout, role);
    if (role != POOL_STATE || !p)
        return -EOPNOTSUPP;
    if (index >= p->max_volumes)
        return -ENOSPC;
    int r = layout_volume_name(role, index, &name);
    if (r < 0)
        return r;
    Layout variant;
    engine_layout_with_volume(e->layout, role, index, &variant);
    r = apply_with(e, &variant, name, ret);
    if (r < 0)
        return r;
    if (ret_name)
        *ret_name = TAKE_PTR(name);
    return 0;
}

int engine_merge_observation(Engine *e, Observation *fresh, bool complete, EngineKeepCached keep, void *userdata) {
    Observation *cached = e->observation;
    int r = 0;
    if (!fresh)
        return 0;
    if (!cached) {
        e->observation = fresh;
        return 0;
    }
    if (complete) {
        for (size_t i = 0; keep && i < cached->n; i++)
            if (keep(cached->volumes[i].name, userdata) && observation_put(fresh, &cached->volumes[i]) < 0)
                r = -ENOMEM;
        observation_free(cached);
        e->observation = fresh;
        return r;
    }
    for (size_t i = 0; i < fresh->n; i++) {
        VolumeObservation *v = &fresh->volumes[i];
        if ((!keep || !keep(v->name, userdata) || !observation_find(cached, v->name)) &&
            observation_put(cached, v) < 0)
            r = -ENOMEM;
    }
    cached->has_backing_free = fresh->has_backing_free;
    cached->backing_free = fresh->backing_free;
    cached->backing_size = fresh->backing_size;
    cached->taken_at = fresh->taken_at;
    observation_free(fresh);
    return r;
}

/* Looks again at one volume (and the host's free space) only: a grow must
 * be quick, and probing every volume of a large host is not. */
static int observe_volume(Engine *e, const char *volume) {
    VolumeObservation v = {};
    int r;
    if (!e->observation) {
        if (!(e->observation = calloc(1, sizeof(Observation))))
            return -ENOMEM;
    }
    r = volumes_observe_one(e->layout, e->record, volume, &v);
    if (r < 0)
        return r;
    r = observation_put(e->observation, &v);
    if (r < 0) {
        volume_observation_done(&v);
        return r;
    }
    volumes_observe_backing_free(e->layout, e->observation);
    e->observation->taken_at = now_usec(CLOCK_REALTIME);
    return 0;
}

int engine_grow(Engine *e, const char *volume, uint64_t new_size, ApplyResult **ret) {
    _cleanup_(plan_freep) Plan *plan = NULL;
    int r = observe_volume(e, volume);
    if (r < 0)
        return r;
    r = volumes_plan_grow(e->layout, e->record, e->observation, volume, new_size, &plan);
    if (r < 0)
        return r;
    VolumesContext c = context_of(e, e->layout);
    r = volumes_apply(&c, plan, NULL, ret);
    if (r < 0)
        return r;
    (void) observe_volume(e, volume);
    return 0;
}

int engine_plan_teardown(Engine *e, const TeardownOptions *opts, Plan **ret) {
    int r = engine_observe(e);
    if (r < 0)
        return r;
    return volumes_plan_teardown(e->layout, e->record, e->observation, opts, ret);
}

int engine_teardown(Engine *e, const TeardownOptions *opts, ApplyResult **ret) {
    _cleanup_(apply_result_freep) ApplyResult *res = NULL;
    int r = engine_observe(e);
    if (r < 0)
        return r;
    VolumesContext c = context_of(e, e->layout);
    r = volumes_teardown(&c, e->observation, opts, &res);
    if (r < 0)
        return r;
    if (e->record_path && e->record->n_volumes == 0 && e->record->n_workspaces == 0 &&
        unlink(e->record_path) < 0 && errno != ENOENT) {
        r = negative_errno();
        ApplyVolumeResult *v = apply_result_add_volume(res, "record");
        if (!v)
            return -ENOMEM;
        apply_volume_result_fail(v, APPLY_OUTCOME_FAILED, r, "cannot remove %s: %s", e->record_path, strerror(-r));
    }
    (void) engine_observe(e);
    *ret = TAKE_PTR(res);
    return 0;
}

int engine_reclaim(Engine *e, const char *volume, ApplyResult **ret, char **ret_error) {
    const VolumeRecord *v = volume ? state_record_find_volume(e->record, volume) : NULL;
    if (!v || v->role != POOL_STATE) {
        set_error(ret_error, "%s is not a state volume of the record", volume ?: "(none)");
        return -ENOENT;
    }
    for (size_t i = 0; i < e->record->n_workspaces; i++)
        if (streq_ptr(e->record->workspaces[i]->volume, volume)) {
            set_error(ret_error, "%s holds workspace %s (kept data included): not reclaimed", volume,
                      e->record->workspaces[i]->id);
            return -ENOTEMPTY;
        }
    /* What the record does not know must not go either: a directory left
     * by a crash is someone's data until a reconcile says whose. */
    _cleanup_free_ char *mount = NULL;
    _cleanup_close_ int wfd = -EBADF;
    int r = layout_mount_path(e->layout, volume, &mount);
    if (r < 0)
        return r;
    r = place_open_workspaces_dir(mount, false, &wfd);
    if (r >= 0) {
        DIR *d = fdopendir(TAKE_FD(wfd));
        if (!d)
            return -errno;
        struct dirent *de;
        bool empty = true;
        while ((de = readdir(d)))
            if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                empty = false;
        closedir(d);
        if (!empty) {
            set_error(ret_error, "%s/workspaces is not empty: not reclaimed", mount);
            return -ENOTEMPTY;
        }
    } else if (r != -ENOENT) {
        set_error(ret_error, "cannot read %s/workspaces: %s", mount, strerror(-r));
        return r;
    }
    TeardownOptions opts = { .destroy_data = true, .only = volume };
    return engine_teardown(e, &opts, ret);
}

int engine_repair(Engine *e, const RepairOptions *opts, ApplyResult **ret) {
    _cleanup_(plan_freep) Plan *plan = NULL;
    int r = engine_plan(e, &plan);
    if (r < 0)
        return r;
    VolumesContext c = context_of(e, e->layout);
    r = volumes_repair(&c, plan, e->observation, opts, ret);
    if (r < 0)
        return r;
    (void) engine_observe(e);
    return 0;
}
