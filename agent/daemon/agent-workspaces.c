/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Workspaces in the agent: placement over the cached observation, carving
 * a new flush domain when every volume is at its bound (in a worker:
 * creates that need the same new volume wait for one carve together), the
 * supervision of every daemon, and the three operations of the API:
 *
 *   create   decide -> [carve] -> directory + record -> daemon -> running
 *   remove   daemon stopped -> record inactive -> [data destroyed, in a
 *            worker] -> record dropped
 *   restart  daemon restarted -> running again with a new pid
 *
 * Each operation ends when its daemon says so (the supervisor's state
 * changes), never by polling.
 */
#include <inttypes.h>
#include <stdio.h>

#include "agent.h"
#include "argv.h"
#include "log.h"
#include "place-cache.h"
#include "place-shard.h"
#include "place-workspaces.h"
#include "util.h"

typedef struct PendingCreate PendingCreate;
struct PendingCreate {
    PendingCreate *next;
    char *id;
    char *tenant;
    uint64_t quota;
    char **labels;
    bool reclaim;
    ApiOperation *op;
    unsigned attempts;        /* placements redone so far (a carve refused, a volume filled) */
};

typedef struct PendingCarve PendingCarve;
struct PendingCarve {
    PendingCarve *next;
    unsigned index;
    char *name;
    PendingCreate *creates;
};

typedef enum WaiterKind {
    WAIT_RUNNING,             /* create, restart: the daemon runs (a new pid) */
} WaiterKind;

typedef struct WorkspaceWaiter WorkspaceWaiter;
struct WorkspaceWaiter {
    WorkspaceWaiter *next;
    char *id;
    WaiterKind kind;
    pid_t old_pid;            /* restart: the pid that must go */
    ApiOperation *op;
    int step;
    unsigned status;          /* the answer's status: 201 create, 200 restart */
};

/* The module's state (Agent.workspaces). */
struct AgentWorkspaces {
    PendingCarve *carves;     /* state volumes being carved for creates */
    PlaceCandidate *place_extras; /* agent_place_context's buffer */
    WorkspaceWaiter *waiters; /* operations waiting on a daemon's state */
    uint64_t creates, create_failures; /* asked through the API, and failed */
};

static void pending_create_free(PendingCreate *c) {
    free(c->id);
    free(c->tenant);
    strv_free(c->labels);
    api_operation_unref(c->op);
    free(c);
}

static bool id_is_pending(Agent *a, const char *id) {
    for (PendingCarve *p = a->workspaces ? a->workspaces->carves : NULL; p; p = p->next)
        for (PendingCreate *c = p->creates; c; c = c->next)
            if (streq(c->id, id))
                return true;
    return false;
}

/* ---- the placement context over the cache ------------------------------ */

static int place_observe_cached(void *userdata, const VolumeRecord *v, const char *mount_path,
                                PlaceVolumeObservation *ret) {
    Agent *a = userdata;
    const VolumeObservation *o = agent_volume(a, v->name);
    *ret = (PlaceVolumeObservation) {};
    if (!o || !volume_observation_is_up(o) || !o->has_statvfs) {
        ret->flags |= PLACE_VOLUME_UNAVAILABLE;
        return 0;
    }
    /* What growth can still add counts as free: a volume that grows is
     * not full (a filesystem with a fixed inode table, ext4, gains inodes
     * with its size, in proportion). */
    uint64_t growable = agent_capacity_growable(a, o);
    const FsType *fs = fs_type_find(o->mount.fstype);
    ret->free_bytes = o->fs_avail + growable;
    ret->free_inodes = o->fs_inodes_free;
    ret->size_bytes = o->fs_size + growable;
    if (!volume_observation_enforces_quota(o))
        ret->flags |= PLACE_VOLUME_NO_QUOTA;
    if (growable && o->file_size && fs && fs->fixed_inodes)
        ret->free_inodes += (uint64_t) ((unsigned __int128) o->fs_inodes * growable / o->file_size);
    if (o->fs_read_only)
        ret->flags |= PLACE_VOLUME_READ_ONLY;
    /* A warning (filling) still takes workspaces; degraded ones (full and
     * not growing, writes failing, not as asked) do not. */
    const char *health = agent_volume_health(a, o, NULL);
    if (!streq(health, "ok") && !streq(health, "warning"))
        ret->flags |= PLACE_VOLUME_DEGRADED;
    if (o->has_vdo_stats && o->vdo.mode == VDO_MODE_READ_ONLY)
        ret->flags |= PLACE_VOLUME_READ_ONLY;
    /* What the flush probe measured lately: placement passes over a
     * volume that flushes slowly next to fast ones (slow_flush_factor). */
    usec_t cost;
    if (agent_modules_flush_cost(a, v->name, &cost)) {
        ret->flush_known = true;
        ret->flush_usec = cost;
    }
    return 0;
}

/* Candidates the record does not describe: volumes being carved (with the
 * creates that wait for them), and state volumes the engine refused and
 * never recorded (a foreign file at state-N.img): their index is skipped. */
static PlaceCandidate *place_extras(Agent *a, size_t *ret_n) {
    size_t n = 0, cap = 0;
    PlaceCandidate *x = NULL;
    const Pool *p = layout_pool(agent_layout(a), POOL_STATE);
    for (PendingCarve *c = a->workspaces ? a->workspaces->carves : NULL; c; c = c->next) {
        if (n == cap) {
            cap = MAX(cap * 2, 8u);
            PlaceCandidate *t = realloc(x, sizeof(*t) * cap);
            if (!t)
                break;
            x = t;
        }
        unsigned waiting = 0;
        const char *tenant = "";
        for (PendingCreate *pc = c->creates; pc; pc = pc->next, waiting++)
            tenant = pc->tenant ?: "";
        x[n++] = (PlaceCandidate) {
            .name = c->name,
            .index = c->index,
            .n_workspaces = waiting,
            .tenant = tenant,
            /* Not observable yet: what a fresh volume of the pool offers. */
            .free_bytes = p ? p->volume_size : 0,
            .free_inodes = UINT64_MAX,
            .flags = PLACE_VOLUME_CARVING,
        };
    }
    for (size_t i = 0; a->volume_results && i < a->volume_results->n_volumes; i++) {
        const ApplyVolumeResult *v = &a->volume_results->volumes[i];
        unsigned index;
        if (v->outcome != APPLY_OUTCOME_REFUSED || state_record_find_volume(agent_record(a), v->volume) ||
            sscanf(v->volume, "state-%u", &index) != 1)
            continue;
        if (n == cap) {
            cap = MAX(cap * 2, 8u);
            PlaceCandidate *t = realloc(x, sizeof(*t) * cap);
            if (!t)
                break;
            x = t;
        }
        x[n++] = (PlaceCandidate) { .name = v->volume, .index = index, .flags = PLACE_VOLUME_UNAVAILABLE };
    }
    *ret_n = n;
    return x;
}

static int place_save_queued(void *userdata, StateRecord *record) {
    Agent *a = userdata;
    return record_saver_submit(a->saver, record);
}

void agent_place_context(Agent *a, PlaceContext *ret) {
    AgentWorkspaces *ws = a->workspaces;
    size_t n = 0;
    PlaceCandidate *extras = NULL;
    /* Kept until the next call: the context points into it. */
    if (ws) {
        free(ws->place_extras);
        extras = ws->place_extras = place_extras(a, &n);
    }
    *ret = (PlaceContext) {
        .layout = agent_layout(a),
        .record = agent_record(a),
        .record_path = a->engine->record_path,
        .save = place_save_queued,
        .save_userdata = a,
        .observe = place_observe_cached,
        .observe_userdata = a,
        .extra = extras,
        .n_extra = n,
    };
    const Observation *o = a->engine->observation;
    const Pool *p = layout_pool(agent_layout(a), POOL_STATE);
    const BackendTraits *t = p ? backend_traits(p->backend) : NULL;
    if (o && o->has_backing_free && t && t->has_device) {
        /* Volumes being carved take their share first (once observed,
         * their sparse file is counted as promised already). */
        uint64_t pending = 0;
        for (PendingCarve *c = ws ? ws->carves : NULL; c; c = c->next)
            if (!agent_volume(a, c->name))
                pending += p->volume_size;
        uint64_t room = capacity_host_carvable(p, o);
        ret->host_checked = true;
        ret->host_carvable = room > pending ? room - pending : 0;
    }
}

/* Decided, never done: an explanation carves nothing. */
static int no_carve(void *userdata, PoolRole role, unsigned index, char **ret) {
    return -EPERM;
}

int agent_workspace_placement(Agent *a, const char *id, const char *tenant, json_object **ret) {
    PlaceContext ctx;
    agent_place_context(a, &ctx);
    ctx.carve = no_carve;
    ctx.save = NULL;
    return place_workspace_why(&ctx, id, tenant, ret);
}

/* ---- supervision ----------------------------------------------------------- */

/* Is the volume in service as the record knows it: up (mounted, or the
 * dir there), not refused, and carrying the identity the record gave it?
 * NULL when it is; else why not, into buf. */
static const char *volume_unready(Agent *a, const char *name, char *buf, size_t size) {
    const VolumeRecord *rec = name ? state_record_find_volume(agent_record(a), name) : NULL;
    const VolumeObservation *o = name ? agent_volume(a, name) : NULL;
    const ApplyVolumeResult *res = name ? apply_result_find(a->volume_results, name) : NULL;
    if (!rec)
        snprintf(buf, size, "%s is not a volume in the record", name ?: "its volume");
    else if (res && (res->outcome == APPLY_OUTCOME_REFUSED || res->outcome == APPLY_OUTCOME_FAILED))
        snprintf(buf, size, "%s is %s: %s", name, apply_outcome_to_string(res->outcome), res->message ?: "?");
    else if (!o || !volume_observation_is_up(o))
        snprintf(buf, size, "%s is not in service (not mounted)", name);
    else if (!rec->identity || !o->identity || strcasecmp(rec->identity, o->identity) != 0)
        snprintf(buf, size, "%s does not carry its identity (%s/%s): %s", name, o->mount_path,
                 ".layoutd-volume", o->identity ? "another volume's" : "none yet");
    else
        return NULL;
    return buf;
}

/* What keeps a workspace's daemon from starting: its state volume, or a
 * content shard, out of service. NULL when nothing does. A daemon started
 * anyway would serve the bare directory under an unmounted volume, and
 * put its large files on the host's root filesystem. */
static const char *content_blocker(Agent *a, char *buf, size_t size);

static const char *workspace_blocker(Agent *a, const WorkspaceRecord *w, char *buf, size_t size) {
    if (volume_unready(a, w->volume, buf, size))
        return buf;
    return content_blocker(a, buf, size);
}

/* A content shard out of service, which every workspace needs. */
static const char *content_blocker(Agent *a, char *buf, size_t size) {
    const Pool *cp = layout_pool(agent_layout(a), POOL_CONTENT);
    for (unsigned i = 0; cp && i < (cp->shards ?: 1); i++) {
        _cleanup_free_ char *name = NULL;
        if (layout_volume_name(POOL_CONTENT, i, &name) < 0)
            return NULL;
        if (volume_unready(a, name, buf, size))
            return buf;
    }
    return NULL;
}

const char *agent_workspace_blocker(Agent *a, const char *id, char *buf, size_t size) {
    const WorkspaceRecord *w = state_record_find_workspace(agent_record(a), id);
    return w && w->active ? workspace_blocker(a, w, buf, size) : NULL;
}

/* The daemon's environment beyond the layout's: the volumes it may serve,
 * by identity (examples/wsfs checks them before it mounts). */
static int identity_environment(Agent *a, const WorkspaceRecord *w, char ***env) {
    const Layout *l = agent_layout(a);
    const VolumeRecord *sv = state_record_find_volume(agent_record(a), w->volume);
    _cleanup_free_ char *path = NULL, *kv = NULL, *uuids = NULL;
    int r;
    if (sv && sv->identity) {
        if ((r = layout_mount_path(l, sv->name, &path)) < 0)
            return r;
        if (asprintf(&kv, "LAYOUTD_STATE_VOLUME=%s", path) < 0 || strv_extend(env, kv) < 0)
            return -ENOMEM;
        kv = mfree(kv);
        if (asprintf(&kv, "LAYOUTD_STATE_VOLUME_UUID=%s", sv->identity) < 0 || strv_extend(env, kv) < 0)
            return -ENOMEM;
    }
    const Pool *cp = layout_pool(l, POOL_CONTENT);
    for (unsigned i = 0; cp && i < (cp->shards ?: 1); i++) {
        _cleanup_free_ char *name = NULL, *joined = NULL;
        if ((r = layout_volume_name(POOL_CONTENT, i, &name)) < 0)
            return r;
        const VolumeRecord *cv = state_record_find_volume(agent_record(a), name);
        if (!cv || !cv->identity)
            return 0; /* not all known: the daemon checks none (the gate holds it back) */
        if (asprintf(&joined, "%s%s%s", uuids ?: "", uuids ? "," : "", cv->identity) < 0)
            return -ENOMEM;
        free(uuids);
        uuids = TAKE_PTR(joined);
    }
    if (uuids) {
        kv = mfree(kv);
        if (asprintf(&kv, "LAYOUTD_CONTENT_UUIDS=%s", uuids) < 0 || strv_extend(env, kv) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* The package store the workspace's daemon is handed (examples/wsfs
 * README, "The package store"): one per tenant per state volume, at
 * <volume>/stores/<tenant>, or stores/_shared for the workspaces that have
 * no tenant ("_" cannot start a tenant's name). Workspaces of one tenant
 * trust each other with it: any of them can add to it. None with
 * workspace.package_store off, and none for a workspace with a byte
 * quota, or one being set (workspace_record_quota_bound): the store's
 * files are charged to no workspace's quota, so a bounded workspace could
 * grow past its bound through them.
 * Returns: 0 (*ret: the dir), -ENOENT (no store), <0 on error. */
static int store_dir(Agent *a, const WorkspaceRecord *w, char **ret) {
    const Layout *l = agent_layout(a);
    _cleanup_free_ char *vol = NULL;
    if (!l->workspace.package_store || workspace_record_quota_bound(w) > 0 || !w->volume)
        return -ENOENT;
    int r = layout_mount_path(l, w->volume, &vol);
    if (r < 0)
        return r;
    if (asprintf(ret, "%s/stores/%s", vol, w->tenant ?: "_shared") < 0)
        return -ENOMEM;
    return 0;
}

bool agent_workspace_has_store(Agent *a, const WorkspaceRecord *w) {
    /* What its running daemon was started with (the supervisor keeps it;
     * it reads a re-adopted daemon's environment once): an upgrade or a
     * reload may have changed the layout since. An empty value is none,
     * as the daemon reads it. */
    _cleanup_free_ char *dir = NULL;
    int r = a->supervisor ? supervisor_daemon_getenv(a->supervisor, w->id, "LAYOUTD_STORE_DIR", &dir) : -ESRCH;
    if (r >= 0)
        return r > 0 && !isempty(dir);
    /* No daemon runs: what its next start gets. */
    return store_dir(a, w, &dir) >= 0;
}

static int store_environment(Agent *a, const WorkspaceRecord *w, char ***env) {
    _cleanup_free_ char *dir = NULL, *kv = NULL;
    int r = store_dir(a, w, &dir);
    if (r == -ENOENT)
        return 0;
    if (r < 0)
        return r;
    if (asprintf(&kv, "LAYOUTD_STORE_DIR=%s", dir) < 0 || strv_extend(env, kv) < 0)
        return -ENOMEM;
    return 0;
}

/* Where the daemon writes its counters (the agent reads them with the
 * flush probe: a lost object shows as a problem). */
static int stats_environment(Agent *a, const WorkspaceRecord *w, char ***env) {
    _cleanup_free_ char *path = NULL, *kv = NULL;
    int r = agent_daemon_stats_path(a, w->id, &path);
    if (r < 0)
        return r;
    if (asprintf(&kv, "LAYOUTD_STATS_FILE=%s", path) < 0 || strv_extend(env, kv) < 0)
        return -ENOMEM;
    return 0;
}

/* The layout's daemon spec for W, handed to the supervisor: added (and
 * started) when not supervised yet unless ONLY_UPDATE, else updated so
 * the daemon's next start runs it. */
static int workspace_supervise(Agent *a, const WorkspaceRecord *w, bool only_update) {
    _cleanup_strv_free_ char **content = NULL, **argv = NULL, **env = NULL;
    const Layout *l = agent_layout(a);
    int r;

    /* No content pool: no shards (the validator made sure the command does
     * not name them). */
    r = place_content_dirs(l, &content);
    if (r < 0 && r != -ENOENT)
        return log_error_errno(r, "workspace %s: cannot list content shards: %m", w->id);
    ArgvValues values = {
        .id = w->id,
        .tenant = w->tenant,
        .state_dir = w->state_dir,
        .content_dirs = (const char *const *) content,
        .mountpoint = w->mountpoint,
        .volume = w->volume,
    };
    r = argv_template_expand((const char *const *) l->workspace.command, &values, &argv);
    if (r < 0)
        return log_error_errno(r, "workspace %s: cannot expand the daemon's command: %m", w->id);

    WorkspaceSpec spec = {};
    supervisor_spec_from_config(&spec, &l->workspace);
    if ((r = strv_copy((const char *const *) spec.environment, &env)) < 0 ||
        (r = identity_environment(a, w, &env)) < 0 || (r = stats_environment(a, w, &env)) < 0 ||
        (r = store_environment(a, w, &env)) < 0)
        return log_error_errno(r, "workspace %s: cannot make the daemon's environment: %m", w->id);
    spec.id = w->id;
    spec.argv = argv;
    spec.environment = env;
    spec.mountpoint = w->mountpoint;
    _cleanup_free_ char *cache = NULL;
    if (l->workspace.cache && w->volume && w->state_dir) {
        r = place_cache_source(l, w->volume, w->id, &cache);
        if (r < 0)
            return log_error_errno(r, "workspace %s: cannot name its cache: %m", w->id);
        spec.cache_source = cache;
        spec.cache_name = l->workspace.cache_path ?: LAYOUT_CACHE_PATH;
        spec.cache_owner_dir = w->state_dir;
    }
    spec.shards = (unsigned) strv_length((const char *const *) content);
    /* Supervised already: its next start (a restart, a crash, leaving
     * BLOCKED) runs what the layout says now, not what it said when the
     * workspace was created. */
    if (only_update)
        r = supervisor_update(a->supervisor, &spec);
    else {
        r = supervisor_add(a->supervisor, &spec, w->daemon.pid > 0 ? &w->daemon : NULL);
        if (r == -EEXIST)
            r = supervisor_update(a->supervisor, &spec);
    }
    if (r < 0)
        return log_error_errno(r, "workspace %s: cannot supervise its daemon: %m", w->id);
    return 0;
}

int agent_workspace_spawn(Agent *a, const WorkspaceRecord *w) {
    return workspace_supervise(a, w, false);
}

int agent_workspace_respec(Agent *a, const WorkspaceRecord *w) {
    WorkspaceStatus st;
    if (!a->supervisor || supervisor_get_status(a->supervisor, w->id, &st) < 0)
        return 0;
    return workspace_supervise(a, w, true);
}

static void waiters_refresh_blocked(Agent *a);

static void workspaces_observed(Agent *a) {
    if (!a->supervisor || a->stopping)
        return;
    /* The blocked ones start with what the volumes say now (their
     * identities, once written). */
    StateRecord *record = agent_record(a);
    for (size_t i = 0; i < record->n_workspaces; i++) {
        const WorkspaceRecord *w = record->workspaces[i];
        WorkspaceStatus st;
        if (w->active && supervisor_get_status(a->supervisor, w->id, &st) >= 0 && st.state == SUPERVISOR_BLOCKED)
            (void) agent_workspace_spawn(a, w);
    }
    size_t n = supervisor_unblock(a->supervisor);
    if (n > 0)
        log_info("%zu workspace(s) unblocked: their volumes are in service", n);
    waiters_refresh_blocked(a);
}

/* Each waiting operation says why it makes no progress while its
 * workspace's volumes are out of service (its "blocked" field), and stops
 * saying so once they are back. */
static void waiters_refresh_blocked(Agent *a) {
    for (WorkspaceWaiter *w = a->workspaces ? a->workspaces->waiters : NULL; w; w = w->next) {
        char buf[512];
        (void) api_operation_set_blocked(w->op, agent_workspace_blocker(a, w->id, buf, sizeof buf));
    }
}

static void waiter_free(WorkspaceWaiter *w) {
    free(w->id);
    api_operation_unref(w->op);
    free(w);
}

static int add_waiter(Agent *a, const char *id, WaiterKind kind, pid_t old_pid, ApiOperation *op, unsigned status,
                      const char *step) {
    AgentWorkspaces *ws = a->workspaces;
    if (!op)
        return 0;
    if (!ws)
        return -ENOMEM;
    WorkspaceWaiter *w = calloc(1, sizeof(*w));
    if (!w || !(w->id = strdup(id))) {
        free(w);
        return -ENOMEM;
    }
    w->kind = kind;
    w->old_pid = old_pid;
    w->op = api_operation_ref(op);
    w->status = status;
    w->step = api_operation_step(op, "%s", step);
    w->next = ws->waiters;
    ws->waiters = w;
    char buf[512];
    (void) api_operation_set_blocked(op, agent_workspace_blocker(a, id, buf, sizeof buf));
    return 0;
}

/* A daemon's state changed: the operations waiting for it may end. */
static void check_waiters(Agent *a, const char *id) {
    WorkspaceStatus st;
    if (!a->workspaces)
        return;
    bool known = a->supervisor && supervisor_get_status(a->supervisor, id, &st) >= 0;
    for (WorkspaceWaiter **p = &a->workspaces->waiters; *p;) {
        WorkspaceWaiter *w = *p;
        if (!streq(w->id, id)) {
            p = &w->next;
            continue;
        }
        bool done = false;
        ApiError err = {};
        if (!known) {
            api_fail(&err, -ENOENT, API_CODE_REMOVED, "workspace '%s' was removed meanwhile", id);
            done = true;
        } else if (st.state == SUPERVISOR_RUNNING && st.pid != w->old_pid) {
            api_operation_step_done(w->op, w->step, 0, "pid %d, ready in %.3f s", (int) st.pid,
                                    (double) st.ready_latency / USEC_PER_SEC);
            WorkspaceRecord *rec = state_record_find_workspace(agent_record(a), id);
            agent_operation_succeed_saved(a, w->op, w->status, rec ? agent_workspace_json(a, rec) : NULL);
            done = true;
        } else if (st.state == SUPERVISOR_BACKOFF || st.state == SUPERVISOR_FAILED) {
            char how[64] = "without a mount";
            if (st.exited && st.exit_signal)
                snprintf(how, sizeof how, "killed by signal %s", sigabbrev_np(st.exit_signal) ?: "?");
            else if (st.exited)
                snprintf(how, sizeof how, "with status %d", st.exit_status);
            api_fail(&err, -EIO, API_CODE_DAEMON_FAILED,
                     "the FUSE daemon of workspace '%s' exited %s before it was ready; %s", id, how,
                     st.state == SUPERVISOR_BACKOFF ? "it is restarted with backoff (see its log)"
                                                    : "it gave up (crash loop); `layoutctl restart` retries");
            done = true;
        }
        if (!done) {
            p = &w->next;
            continue;
        }
        if (err.status) {
            api_operation_step_done(w->op, w->step, -EIO, "%s", err.message);
            api_operation_fail(w->op, &err);
        }
        *p = w->next;
        waiter_free(w);
    }
}

static void create_continue(Agent *a, const char *id, bool was_new, bool resumed, ApiOperation *op);
static PendingCarve *find_carve(Agent *a, const char *name);
static void on_reconciled_start(Agent *a);

/* What the reconcile worker adopted (directories without an entry), added
 * to the agent's record unless an entry appeared meanwhile. */
static void merge_reconcile(Agent *a, json_object *extra) {
    json_object *items, *adopted;
    bool changed = false;
    if (json_object_object_get_ex(extra, "items", &items))
        for (size_t i = 0; i < json_object_array_length(items); i++) {
            json_object *it = json_object_array_get_idx(items, i), *k, *v, *n, *p;
            json_object_object_get_ex(it, "kind", &k);
            json_object_object_get_ex(it, "volume", &v);
            json_object_object_get_ex(it, "name", &n);
            json_object_object_get_ex(it, "path", &p);
            const char *kind = json_object_get_string(k);
            /* Read in a worker: a create may have recorded the id on that
             * volume since, and its cache is then no stray. */
            const WorkspaceRecord *now = n ? state_record_find_workspace(agent_record(a), json_object_get_string(n)) : NULL;
            if (streq_ptr(kind, "stray-cache") && now && v && streq_ptr(now->volume, json_object_get_string(v)))
                continue;
            log_full_errno(streq_ptr(kind, "adopted") ? LOG_NOTICE : LOG_WARNING, 0, "workspace %s on volume %s: %s (%s)",
                           n ? json_object_get_string(n) : "-", v ? json_object_get_string(v) : "-", kind ?: "?",
                           p ? json_object_get_string(p) : "");
        }
    if (json_object_object_get_ex(extra, "adopted", &adopted))
        for (size_t i = 0; i < json_object_array_length(adopted); i++) {
            json_object *o = json_object_array_get_idx(adopted, i), *id, *vol, *dir, *mp;
            if (!json_object_object_get_ex(o, "id", &id) || !json_object_object_get_ex(o, "volume", &vol) ||
                !json_object_object_get_ex(o, "state_dir", &dir))
                continue;
            json_object_object_get_ex(o, "mountpoint", &mp);
            if (state_record_find_workspace(agent_record(a), json_object_get_string(id)))
                continue;
            WorkspaceRecord w = {
                .id = (char *) json_object_get_string(id),
                .volume = (char *) json_object_get_string(vol),
                .state_dir = (char *) json_object_get_string(dir),
                .mountpoint = mp ? (char *) json_object_get_string(mp) : NULL,
                .active = false, /* kept data: counted towards no bound */
                .created_at = now_usec(CLOCK_REALTIME),
            };
            if (state_record_add_workspace(agent_record(a), &w, NULL) >= 0)
                changed = true;
        }
    if (changed)
        agent_persist(a);
}

static void on_reclaimed(Agent *a, int error, const char *message, ApplyResult *res, json_object *extra,
                         void *userdata) {
    _cleanup_free_ char *volume = userdata;
    bool ok = error >= 0 && apply_result_ok(res);
    if (ok) {
        log_notice("volume %s: reclaimed: it held no workspace and the pool keeps min_volumes without it", volume);
        agent_volume_gone(a, volume);
    }
    else
        log_warning("volume %s: not reclaimed: %s", volume, message ?: error < 0 ? strerror(-error) : "see its state");
    json_object *f = json_object_new_object();
    json_object_object_add(f, "volume", json_object_new_string(volume));
    json_object_object_add(f, "ok", json_object_new_boolean(ok));
    json_object_object_add(f, "message", !ok && message ? json_object_new_string(message) : NULL);
    agent_event(a, ok ? "volume.reclaimed" : "volume.reclaim_failed", f);
}

/* At start: state volumes beyond the pool's min_volumes that hold no
 * workspace (kept data included) go. They are what a create that died
 * between its carve and its intent leaves (an agent killed mid-way), or
 * what removes left behind; the next creates carve again when needed.
 * The worker checks the volume's directory is empty before it destroys
 * anything (engine_reclaim). */
static void reclaim_empty_volumes(Agent *a) {
    const Pool *p = layout_pool(agent_layout(a), POOL_STATE);
    StateRecord *record = agent_record(a);
    if (!p)
        return;
    for (size_t i = 0; i < record->n_volumes; i++) {
        const VolumeRecord *v = record->volumes[i];
        if (v->role != POOL_STATE || v->index < p->min_volumes || find_carve(a, v->name))
            continue;
        bool used = false;
        for (size_t k = 0; k < record->n_workspaces && !used; k++)
            used = streq_ptr(record->workspaces[k]->volume, v->name);
        const VolumeObservation *o = agent_volume(a, v->name);
        if (used || !o || !volume_observation_is_up(o))
            continue;
        json_object *args = json_object_new_object();
        json_object_object_add(args, "volume", json_object_new_string(v->name));
        char *name = strdup(v->name);
        log_info("volume %s: holds no workspace, beyond min_volumes (%u): reclaiming it", v->name, p->min_volumes);
        /* Its result is not kept (AGENT_JOB_OWN_RESULT): a reclaimed
         * volume leaves every view at once. */
        if (!name || agent_job_submit_full(a, WORKER_OP_RECLAIM, args, v->name, NULL, AGENT_JOB_OWN_RESULT,
                                          on_reclaimed, name) < 0) {
            free(name);
            log_warning("volume %s: cannot start its reclaim, ignoring", v->name);
        }
    }
}

static void on_reconciled(Agent *a, int error, const char *message, ApplyResult *res, json_object *extra,
                          void *userdata) {
    if (error < 0)
        log_warning("Failed to reconcile workspaces with their directories, ignoring: %s",
                    message ?: strerror(-error));
    else if (extra)
        merge_reconcile(a, extra);
    if (!a->supervisor || a->stopping)
        return;
    bool starting = !a->ready;
    on_reconciled_start(a);
    if (starting)
        reclaim_empty_volumes(a);
    agent_ready(a);
}

/* Every workspace of the record under supervision again (a start, a
 * reload, where workspaces_layout_changed updated the supervised ones
 * already): the active ones, the creates a stop interrupted, the static
 * ones, and the stale mounts of none of them cleaned. */
static void on_reconciled_start(Agent *a) {
    StateRecord *record = agent_record(a);
    for (size_t i = 0; i < record->n_workspaces; i++) {
        const WorkspaceRecord *w = record->workspaces[i];
        if (w->active)
            (void) agent_workspace_spawn(a, w);
    }
    /* Creates a stop interrupted: their intent is on disk, so they go on
     * where they were placed (a client that lost its answer finds the
     * workspace by its id). By id: continuing may change the record. */
    _cleanup_strv_free_ char **creating = NULL;
    for (size_t i = 0; i < record->n_workspaces; i++)
        if (record->workspaces[i]->creating && !id_is_pending(a, record->workspaces[i]->id) &&
            strv_extend(&creating, record->workspaces[i]->id) < 0)
            log_oom();
    for (char **id = creating; id && *id; id++) {
        log_notice("workspace %s: completing its create, which the agent's stop interrupted", *id);
        /* Whether it was new or reclaimed kept data is not recorded: if
         * it cannot be completed, it stays as kept data (nothing lost). */
        create_continue(a, *id, false, true, NULL);
    }

    const WorkspaceConfig *wc = &agent_layout(a)->workspace;
    for (size_t i = 0; i < wc->n_static_workspaces; i++) {
        const StaticWorkspace *sw = &wc->static_workspaces[i];
        WorkspaceRecord *w = place_workspace_get(record, sw->id);
        if ((w && (w->active || w->creating)) || id_is_pending(a, sw->id))
            continue;
        ApiWorkspaceRequest req = { .id = sw->id, .tenant = sw->tenant, .quota = sw->quota };
        ApiError err = {};
        /* Queued: the layout asks for it, so it waits for its volumes. */
        int r = agent_workspace_create(a, &req, true, NULL, &err);
        if (r < 0)
            log_error("workspace %s (static): not created: %s", sw->id, err.message[0] ? err.message : strerror(-r));
        else
            log_info("workspace %s (static): being created", sw->id);
    }

    int r = supervisor_sweep_stale(a->supervisor, wc->mount_root);
    if (r < 0)
        log_warning_errno(r, "Failed to sweep %s for stale FUSE mounts, ignoring: %m", wc->mount_root);
    else if (r > 0)
        log_notice("Cleaned %d stale FUSE mount(s) below %s", r, wc->mount_root);
}

/* Once the volumes are up, and again after every reload's apply: every
 * workspace of the record under supervision (again). Without supervision
 * (--no-workspaces) the core says ready itself. */
static int workspaces_start(Agent *a) {
    if (!a->workspaces && !(a->workspaces = calloc(1, sizeof(AgentWorkspaces))))
        log_oom(); /* creates are refused; what exists is still supervised */
    if (!a->supervisor)
        return 0;
    /* The directories are read in a worker (they are on the state
     * volumes); the daemons start once the record has what it found. */
    int r = agent_job_submit(a, WORKER_OP_RECONCILE, NULL, NULL, NULL, on_reconciled, NULL);
    if (r < 0) {
        log_error_errno(r, "Failed to start reconciling the workspaces, starting them without: %m");
        on_reconciled_start(a);
        agent_ready(a);
        return r;
    }
    return 0;
}

/* After a reload's apply, also a failed one (the new layout is in place
 * either way). The supervised daemons get the new layout's spec here,
 * before the reload is answered: the reconcile that workspaces_start
 * queues completes later, and a restart asked for right after the reload
 * must run what the layout says now. A spec that cannot be made (a user
 * that no longer resolves) is logged, and the old one stays. */
static void workspaces_layout_changed(Agent *a) {
    if (a->supervisor && !a->stopping) {
        StateRecord *record = agent_record(a);
        WorkspaceStatus st;
        for (size_t i = 0; i < record->n_workspaces; i++) {
            const WorkspaceRecord *w = record->workspaces[i];
            if (w->active && supervisor_get_status(a->supervisor, w->id, &st) >= 0)
                (void) workspace_supervise(a, w, true);
        }
    }
    (void) workspaces_start(a);
}

/* ---- create -------------------------------------------------------------- */

/* A placement failure as the API says it: the one errno table
 * (api-error.c), with placement's words; a full host is told apart from
 * a full pool, since the operator's fix differs. */
static void place_error_to_api(int r, const PlaceError *pe, ApiError *err) {
    const char *msg = pe->message ? pe->message : strerror(-r);
    if (r == -ENOSPC && pe->reason == PLACE_REASON_HOST_FULL)
        api_fail_default(err, r, API_CODE_HOST_FULL, "%s", msg);
    else
        api_error_from_errno_message(err, r, msg);
}

static PendingCreate *pending_create_new(const ApiWorkspaceRequest *req, bool reclaim, ApiOperation *op) {
    PendingCreate *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->id = strdup(req->id);
    c->tenant = req->tenant ? strdup(req->tenant) : NULL;
    c->quota = req->quota;
    c->reclaim = reclaim;
    c->op = api_operation_ref(op);
    bool ok = c->id && (!req->tenant || c->tenant);
    if (ok && req->labels) {
        json_object_object_foreach(req->labels, k, v) {
            _cleanup_free_ char *kv = NULL;
            if (asprintf(&kv, "%s=%s", k, json_object_get_string(v)) < 0 || strv_extend(&c->labels, kv) < 0)
                ok = false;
        }
    }
    if (!ok) {
        pending_create_free(c);
        return NULL;
    }
    return c;
}

static PlaceCreateRequest place_request(const PendingCreate *c) {
    return (PlaceCreateRequest) {
        .id = c->id, .tenant = c->tenant, .quota = c->quota, .labels = c->labels, .reclaim = c->reclaim,
    };
}

static void create_failed(Agent *a, PendingCreate *c, const ApiError *err) {
    if (a->workspaces)
        a->workspaces->create_failures++;
    log_warning("workspace %s: create failed: %s", c->id, err->message);
    if (c->op)
        api_operation_fail(c->op, err);
}

/* A create between its intent and its daemon: each step continues from
 * the previous one's callback. */
typedef struct CreateRun {
    char *id;
    bool was_new;             /* no kept data was reclaimed: a failure drops the entry */
    bool resumed;             /* a create a stop interrupted: its directory may exist */
    ApiOperation *op;
    int step;
} CreateRun;

static CreateRun *create_run_free(CreateRun *cr) {
    if (cr) {
        free(cr->id);
        api_operation_unref(cr->op);
        free(cr);
    }
    return NULL;
}

/* A create that cannot go on: the entry goes (or is kept data again), and
 * the operation fails with err. */
static void create_abandon(Agent *a, CreateRun *cr, const ApiError *err) {
    PlaceContext ctx;
    agent_place_context(a, &ctx);
    place_workspace_abandon(&ctx, cr->id, cr->was_new);
    if (a->workspaces)
        a->workspaces->create_failures++;
    log_warning("workspace %s: create failed: %s", cr->id, err->message);
    json_object *f = json_object_new_object();
    json_object_object_add(f, "workspace", json_object_new_string(cr->id));
    json_object_object_add(f, "message", json_object_new_string(err->message));
    agent_event(a, "workspace.create_failed", f);
    if (cr->op) {
        api_operation_step_done(cr->op, cr->step, -EIO, "%s", err->message);
        api_operation_fail(cr->op, err);
    }
    create_run_free(cr);
}

/* The entry still says "being created" (a remove may have come first). */
static WorkspaceRecord *still_creating(Agent *a, const CreateRun *cr) {
    WorkspaceRecord *w = state_record_find_workspace(agent_record(a), cr->id);
    return w && w->creating ? w : NULL;
}

/* still_creating(), or the create ends here: its operation fails with
 * "removed" (a DELETE came while a worker had the create) and cr is
 * freed. Nothing to abandon: the removal owns the record now. */
static WorkspaceRecord *still_creating_or_end(Agent *a, CreateRun *cr) {
    WorkspaceRecord *w = still_creating(a, cr);
    if (!w) {
        ApiError err = {};
        api_fail(&err, -ENOENT, API_CODE_REMOVED, "workspace '%s' was removed while it was being created", cr->id);
        if (cr->op)
            api_operation_fail(cr->op, &err);
        create_run_free(cr);
    }
    return w;
}

static void create_started(Agent *a, CreateRun *cr, WorkspaceRecord *w) {
    log_info("workspace %s: placed on volume %s (%s)", w->id, w->volume, w->state_dir);
    json_object *f = json_object_new_object();
    json_object_object_add(f, "workspace", json_object_new_string(w->id));
    json_object_object_add(f, "volume", json_object_new_string(w->volume));
    agent_event(a, "workspace.created", f);
    int r = agent_workspace_spawn(a, w);
    if (r < 0) {
        ApiError err = {};
        api_fail(&err, r, API_CODE_SPAWN_FAILED, "workspace %s was placed on %s but its daemon could not be started: %s",
                 w->id, w->volume, strerror(-r));
        if (cr->op)
            api_operation_fail(cr->op, &err);
        create_run_free(cr);
        return;
    }
    if (cr->op) {
        WorkspaceStatus st;
        if (supervisor_get_status(a->supervisor, w->id, &st) >= 0 && st.state == SUPERVISOR_RUNNING)
            agent_operation_succeed_saved(a, cr->op, 201, agent_workspace_json(a, w)); /* adopted: running already */
        else
            (void) add_waiter(a, w->id, WAIT_RUNNING, 0, cr->op, 201, "starting the FUSE daemon");
    }
    create_run_free(cr);
}

static void on_dir_made(Agent *a, int error, const char *message, ApplyResult *res, json_object *extra,
                        void *userdata) {
    CreateRun *cr = userdata;
    WorkspaceRecord *w = still_creating_or_end(a, cr);
    ApiError err = {};
    if (!w)
        return;
    if (error < 0) {
        if (error == -EEXIST)
            api_fail(&err, error, API_CODE_EXISTS, "%s", message ?: strerror(-error));
        else
            api_fail(&err, error, API_CODE_INTERNAL, "making the directory of workspace '%s' failed: %s", cr->id,
                     message ?: strerror(-error));
        create_abandon(a, cr, &err);
        return;
    }
    if (cr->op)
        api_operation_step_done(cr->op, cr->step, 0, NULL);
    PlaceContext ctx;
    PlaceError pe = {};
    agent_place_context(a, &ctx);
    int r = place_workspace_activate(&ctx, cr->id, &pe);
    if (r < 0) {
        api_fail(&err, r, API_CODE_INTERNAL, "%s", pe.message ?: strerror(-r));
        place_error_done(&pe);
        create_abandon(a, cr, &err);
        return;
    }
    create_started(a, cr, w);
}

/* After the intent is on disk: the directory, in a worker. */
static void create_make_dir(Agent *a, CreateRun *cr) {
    WorkspaceRecord *w = still_creating_or_end(a, cr);
    ApiError err = {};
    if (!w)
        return;
    json_object *args = json_object_new_object();
    json_object_object_add(args, "volume", json_object_new_string(w->volume));
    json_object_object_add(args, "id", json_object_new_string(w->id));
    /* A resumed create may find its directory made already; so may a
     * reclaim, which wants it. */
    json_object_object_add(args, "reclaim", json_object_new_boolean(!cr->was_new || cr->resumed));
    json_object_object_add(args, "project_id", json_object_new_uint64(w->project_id));
    json_object_object_add(args, "quota", json_object_new_uint64(w->quota));
    if (cr->op)
        cr->step = api_operation_step(cr->op, "making %s", w->state_dir);
    int r = agent_job_submit(a, WORKER_OP_WORKSPACE_DIR, args, w->volume, NULL, on_dir_made, cr);
    if (r < 0) {
        api_fail(&err, r, API_CODE_INTERNAL, "cannot start the directory job of workspace '%s': %s", cr->id,
                 strerror(-r));
        create_abandon(a, cr, &err);
    }
}

typedef struct IntentWait {
    Agent *agent;
    CreateRun *run;
} IntentWait;

static void on_intent_saved(int error, void *userdata) {
    IntentWait *iw = userdata;
    Agent *a = iw->agent;
    CreateRun *cr = iw->run;
    free(iw);
    if (error == -ECANCELED) { /* the agent is going away: the next one goes on */
        create_run_free(cr);
        return;
    }
    if (error < 0) {
        ApiError err = {};
        api_fail(&err, error, API_CODE_RECORD_UNSAVED,
                 "the intent to create workspace '%s' could not be saved: %s; nothing was made", cr->id,
                 strerror(-error));
        create_abandon(a, cr, &err);
        return;
    }
    create_make_dir(a, cr);
}

/* The rest of a create whose intent is recorded: wait until it is durable
 * (so that a directory never exists that no record on disk explains),
 * make the directory in a worker, record it active, start the daemon. */
static void create_continue(Agent *a, const char *id, bool was_new, bool resumed, ApiOperation *op) {
    CreateRun *cr = calloc(1, sizeof(*cr));
    IntentWait *iw = calloc(1, sizeof(*iw));
    if (!cr || !iw || !(cr->id = strdup(id))) {
        free(iw);
        create_run_free(cr);
        log_oom();
        return;
    }
    cr->was_new = was_new;
    cr->resumed = resumed;
    cr->op = api_operation_ref(op);
    *iw = (IntentWait) { .agent = a, .run = cr };
    if (agent_when_saved(a, on_intent_saved, iw, NULL) < 0) {
        free(iw);
        ApiError err = {};
        api_fail(&err, -ENOMEM, API_CODE_INTERNAL, "out of memory");
        create_abandon(a, cr, &err);
    }
}

static int create_decide(Agent *a, PendingCreate *c, ApiError *err);

/* The volume exists and is mounted: intent, then the rest (above).
 * stale: the volume was chosen earlier (the create waited for its carve),
 * so a volume found at its bound now means "decide again", not "refuse":
 * the create is placed anew, as create_decide() answers (1: it waits for
 * another carve, which owns c). */
static int create_on(Agent *a, PendingCreate *c, const char *volume, bool stale, ApiError *err) {
    PlaceContext ctx;
    PlaceError pe = {};
    WorkspaceRecord *w = NULL;
    PlaceCreateRequest req = place_request(c);
    agent_place_context(a, &ctx);
    int r = place_workspace_intent(&ctx, &req, volume, &w, &pe);
    if (r < 0 && stale && pe.reason == PLACE_REASON_AT_BOUND && c->attempts++ < 8) {
        log_info("workspace %s: volume %s filled while it was being carved; placing it again", c->id, volume);
        place_error_done(&pe);
        return create_decide(a, c, err);
    }
    if (r < 0) {
        place_error_to_api(r, &pe, err);
        place_error_done(&pe);
        return r;
    }
    if (c->op) {
        _cleanup_free_ char *res = NULL;
        if (asprintf(&res, "/v1/workspaces/%s", w->id) >= 0)
            (void) api_operation_set_resource(c->op, res);
    }
    create_continue(a, w->id, !c->reclaim, false, c->op);
    return 0;
}

static PendingCarve *find_carve(Agent *a, const char *name) {
    for (PendingCarve *p = a->workspaces ? a->workspaces->carves : NULL; p; p = p->next)
        if (streq(p->name, name))
            return p;
    return NULL;
}

static void on_carved(Agent *a, int error, const char *message, ApplyResult *res, json_object *extra,
                      void *userdata) {
    PendingCarve *carve = userdata;
    for (PendingCarve **p = &a->workspaces->carves; *p; p = &(*p)->next)
        if (*p == carve) {
            *p = carve->next;
            break;
        }
    const ApplyVolumeResult *v = apply_result_find(res, carve->name);
    bool ok = error >= 0 && v && (v->outcome == APPLY_OUTCOME_CHANGED || v->outcome == APPLY_OUTCOME_UNCHANGED);
    bool refused = error >= 0 && v && v->outcome == APPLY_OUTCOME_REFUSED;
    json_object *f = json_object_new_object();
    json_object_object_add(f, "volume", json_object_new_string(carve->name));
    json_object_object_add(f, "ok", json_object_new_boolean(ok));
    json_object_object_add(f, "message", !ok ? json_object_new_string(v && v->message ? v->message
                                                                      : message ?: strerror(-error)) : NULL);
    agent_event(a, ok ? "volume.carved" : "volume.carve_failed", f);
    if (ok)
        log_info("volume %s: carved (a new flush domain)", carve->name);

    /* The volume result is merged after this callback: the placement that
     * retries below must see the refusal now. */
    if (refused && v) {
        ApplyResult *one = NULL;
        if (apply_result_new(&one) >= 0) {
            ApplyVolumeResult *c = apply_result_add_volume(one, carve->name);
            if (c) {
                c->outcome = APPLY_OUTCOME_REFUSED;
                c->message = v->message ? strdup(v->message) : NULL;
            }
            if (apply_result_merge(a->volume_results, &one) < 0)
                apply_result_free(one);
        }
    }

    while (carve->creates) {
        PendingCreate *c = carve->creates;
        carve->creates = c->next;
        c->next = NULL;
        ApiError err = {};
        int r;
        if (ok)
            r = create_on(a, c, carve->name, true, &err);
        else if (refused && c->attempts++ < 8) {
            /* Someone else's file at that index: try the next one. */
            log_warning("volume %s: refused (%s); placing workspace %s elsewhere", carve->name,
                        v->message ?: "?", c->id);
            r = create_decide(a, c, &err);
        } else
            r = api_fail(&err, error < 0 ? error : -EIO, refused ? API_CODE_POOL_FULL : API_CODE_CARVE_FAILED,
                         "carving volume %s failed: %s", carve->name,
                         v && v->message ? v->message : message ?: strerror(error < 0 ? -error : EIO));
        if (r > 0)
            continue; /* it waits for another carve now, and owns c */
        if (r < 0)
            create_failed(a, c, &err);
        pending_create_free(c);
    }
    free(carve->name);
    free(carve);
    agent_update_status(a);
}

/* Decides, and either creates at once (0), waits for a carve that owns c
 * from then on (1), or fails (<0 with err). */
static int create_decide(Agent *a, PendingCreate *c, ApiError *err) {
    PlaceContext ctx;
    PlaceError pe = {};
    PlaceCreateRequest req = place_request(c);
    _cleanup_free_ char *volume = NULL, *why = NULL;
    PlaceAction action;
    unsigned index = 0;
    bool carving = false;
    agent_place_context(a, &ctx);
    int r = place_workspace_decide(&ctx, &req, &action, &volume, &index, &carving, &why, &pe);
    if (r < 0) {
        place_error_to_api(r, &pe, err);
        place_error_done(&pe);
        return r;
    }
    /* The policy's reason, for the log and the operation's steps: what
     * `layoutctl why` would have said (a volume passed over for its flush
     * cost names the figure). */
    log_info("workspace %s: %s %s", c->id, place_action_to_string(action), why ?: "");
    if (c->op && why) {
        int k = api_operation_step(c->op, "placement: %s", why);
        if (k >= 0)
            api_operation_step_done(c->op, k, 0, "%s", place_action_to_string(action));
    }
    if (action == PLACE_ACTION_USE && !carving)
        return create_on(a, c, volume, false, err);

    PendingCarve *carve = action == PLACE_ACTION_USE ? find_carve(a, volume) : NULL;
    if (!carve) {
        carve = calloc(1, sizeof(*carve));
        if (!carve)
            return -ENOMEM;
        carve->index = index;
        r = layout_volume_name(POOL_STATE, index, &carve->name);
        if (r < 0) {
            free(carve);
            return r;
        }
        json_object *args = json_object_new_object();
        json_object_object_add(args, "role", json_object_new_string("state"));
        json_object_object_add(args, "index", json_object_new_int((int) index));
        r = agent_job_submit(a, WORKER_OP_CARVE, args, carve->name, c->op, on_carved, carve);
        if (r < 0) {
            free(carve->name);
            free(carve);
            return r;
        }
        carve->next = a->workspaces->carves;
        a->workspaces->carves = carve;
        log_info("volume %s: carving a new flush domain for workspace %s (no state volume can take it)",
                 carve->name, c->id);
    } else if (c->op)
        (void) api_operation_step(c->op, "waiting for volume %s, being carved", carve->name);
    c->next = carve->creates;
    carve->creates = c;
    return 1;
}

int agent_workspace_create(Agent *a, const ApiWorkspaceRequest *req, bool queue, ApiOperation *op, ApiError *err) {
    if (!a->supervisor)
        return api_fail(err, -EOPNOTSUPP, API_CODE_NOT_SUPERVISING,
                        "the agent runs without workspaces (--no-workspaces)");
    if (!a->workspaces)
        return -ENOMEM;
    if (id_is_pending(a, req->id))
        return api_fail(err, -EEXIST, API_CODE_EXISTS, "workspace '%s' is being created", req->id);
    /* A create that cannot finish while a content shard is out of service
     * is refused at once with the reason, rather than accepted to wait as
     * long as the fault lasts; a client that wants exactly that asks for
     * it. (The state pool's own volumes are the placement's business: one
     * out of service is passed over.) */
    char why[512];
    if (!queue && content_blocker(a, why, sizeof why))
        return api_fail(err, -EBUSY, API_CODE_BLOCKED,
                        "workspace '%s' cannot be created now: %s; retry once it is back in service, "
                        "or queue the create until then (?queue=true)", req->id, why);
    WorkspaceRecord *old = place_workspace_get(agent_record(a), req->id);
    /* Asking for an id whose data was kept means asking for it back. */
    PendingCreate *c = pending_create_new(req, old && !old->active, op);
    if (!c)
        return -ENOMEM;
    a->workspaces->creates++;
    int r = create_decide(a, c, err);
    if (r > 0)
        return 1; /* the carve owns c */
    if (r < 0)
        create_failed(a, c, err);
    pending_create_free(c);
    if (r < 0)
        return r;
    return op && !api_operation_done(op) ? 1 : 0;
}

/* ---- remove ---------------------------------------------------------------- */

typedef struct RemoveJob {
    Agent *agent;
    bool destroy;
    ApiOperation *op;
    int step;
    char *id;
    char *dir;                /* destroy: the workspaces directory holding id */
} RemoveJob;

static void remove_job_free(RemoveJob *j) {
    api_operation_unref(j->op);
    free(j->dir);
    free(j->id);
    free(j);
}

static json_object *removed_json(const char *id, bool destroyed, const char *state) {
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", json_object_new_string(id));
    json_object_object_add(o, "removed", json_object_new_boolean(true));
    json_object_object_add(o, "data_destroyed", json_object_new_boolean(destroyed));
    json_object_object_add(o, "state", json_object_new_string(state));
    return o;
}

static void remove_finish(Agent *a, RemoveJob *j, int r, const char *message) {
    json_object *f = json_object_new_object();
    json_object_object_add(f, "workspace", json_object_new_string(j->id));
    json_object_object_add(f, "data_destroyed", json_object_new_boolean(j->destroy && r >= 0));
    json_object_object_add(f, "error", r < 0 ? json_object_new_string(message ?: strerror(-r)) : NULL);
    agent_event(a, "workspace.removed", f);
    if (r < 0)
        log_error("workspace %s: stopped, but removing it failed: %s", j->id, message ?: strerror(-r));
    else
        log_info("workspace %s: removed (%s)", j->id, j->destroy ? "data destroyed" : "data kept");
    if (j->op) {
        if (r < 0) {
            ApiError e = {};
            api_fail(&e, r, API_CODE_REMOVE_FAILED, "%s", message ?: strerror(-r));
            api_operation_fail(j->op, &e);
        } else
            agent_operation_succeed_saved(a, j->op, 200, removed_json(j->id, j->destroy, "removed"));
    }
    remove_job_free(j);
    agent_update_status(a);
}

static void on_cache_destroyed(Agent *a, int error, const char *message, ApplyResult *res, json_object *extra,
                               void *userdata) {
    RemoveJob *j = userdata;
    PlaceContext ctx;
    PlaceError pe = {};
    if (j->op)
        api_operation_step_done(j->op, j->step, error, error < 0 ? "%s" : NULL, message ?: "");
    if (error < 0) {
        remove_finish(a, j, error, message);
        return;
    }
    agent_place_context(a, &ctx);
    int r = place_workspace_forget(&ctx, j->id, &pe);
    remove_finish(a, j, r, pe.message);
    place_error_done(&pe);
}

/* The data is gone: its cache (derived data, on the same volume, beside
 * the state dir) goes next, whether or not the layout has caches on now: a
 * cache made while it had is the workspace's too. A missing one is no
 * error. The record is forgotten last, so a failure leaves a workspace
 * that a second destroy finishes. */
static void on_data_destroyed(Agent *a, int error, const char *message, ApplyResult *res, json_object *extra,
                              void *userdata) {
    RemoveJob *j = userdata;
    _cleanup_free_ char *parent = NULL;
    if (j->op)
        api_operation_step_done(j->op, j->step, error, error < 0 ? "%s" : NULL, message ?: "");
    if (error < 0) {
        remove_finish(a, j, error, message);
        return;
    }
    WorkspaceRecord *w = state_record_find_workspace(agent_record(a), j->id);
    int r = w && w->volume ? place_cache_parent(agent_layout(a), w->volume, &parent) : -ENOENT;
    if (r == -ENOENT) {
        j->step = -1;
        on_cache_destroyed(a, 0, NULL, NULL, NULL, j);
        return;
    }
    if (r < 0) {
        remove_finish(a, j, r, NULL);
        return;
    }
    json_object *args = json_object_new_object();
    json_object_object_add(args, "dir", json_object_new_string(parent));
    json_object_object_add(args, "name", json_object_new_string(j->id));
    if (j->op)
        j->step = api_operation_step(j->op, "destroying the cache in %s/%s", parent, j->id);
    r = agent_job_submit(a, WORKER_OP_RMTREE, args, w->volume, NULL, on_cache_destroyed, j);
    if (r < 0)
        remove_finish(a, j, r, NULL);
}

/* The record says "inactive" on disk: now the data may go. */
static void destroy_when_saved(int error, void *userdata) {
    RemoveJob *j = userdata;
    Agent *a = j->agent;
    if (error == -ECANCELED) { /* the agent is going away: nothing is deleted */
        remove_job_free(j);
        return;
    }
    if (error < 0) {
        _cleanup_free_ char *m = NULL;
        if (asprintf(&m, "the record could not be saved (%s), so the data in %s/%s is kept", strerror(-error),
                     j->dir, j->id) < 0)
            m = NULL;
        remove_finish(a, j, error, m);
        return;
    }
    /* rm -r of a workspace (a node_modules tree) takes seconds: a worker. */
    json_object *args = json_object_new_object();
    json_object_object_add(args, "dir", json_object_new_string(j->dir));
    json_object_object_add(args, "name", json_object_new_string(j->id));
    WorkspaceRecord *w = state_record_find_workspace(agent_record(a), j->id);
    if (j->op)
        j->step = api_operation_step(j->op, "destroying the data in %s/%s", j->dir, j->id);
    int r = agent_job_submit(a, WORKER_OP_RMTREE, args, w ? w->volume : NULL, NULL, on_data_destroyed, j);
    if (r < 0)
        remove_finish(a, j, r, NULL);
}

static void on_removed(Supervisor *s, const char *id, void *userdata) {
    RemoveJob *j = userdata;
    Agent *a = j->agent;
    PlaceContext ctx;
    PlaceError pe = {};
    _cleanup_free_ char *dir = NULL;
    if (j->op)
        api_operation_step_done(j->op, j->step, 0, NULL);
    agent_modules_workspace_removed(a, id);
    agent_place_context(a, &ctx);
    /* The record says "inactive" first: a crash half-way through the
     * deletion leaves kept (partial) data that a second destroy finishes,
     * never an active workspace with missing files. */
    int r = place_workspace_remove(&ctx, id, 0, &pe);
    if (r >= 0 && j->destroy)
        r = place_workspace_data_dir(&ctx, id, &dir, &pe);
    if (r < 0 || !j->destroy) {
        remove_finish(a, j, r, pe.message);
        place_error_done(&pe);
        return;
    }
    if (!dir) {
        /* The record lost the volume: nothing reachable to delete. */
        r = place_workspace_forget(&ctx, id, &pe);
        remove_finish(a, j, r, pe.message);
        place_error_done(&pe);
        return;
    }
    /* "inactive" must be on disk before a byte is deleted. */
    free(j->dir);
    j->dir = TAKE_PTR(dir);
    r = agent_when_saved(a, destroy_when_saved, j, NULL);
    if (r < 0)
        remove_finish(a, j, r, NULL);
}

int agent_workspace_remove(Agent *a, const char *id, bool destroy, ApiOperation *op, ApiError *err) {
    WorkspaceRecord *w = place_workspace_get(agent_record(a), id);
    if (!w || (!w->active && !destroy))
        return api_fail(err, -ENOENT, API_CODE_NOT_FOUND, "no active workspace '%s'", id);
    if (id_is_pending(a, id) || w->creating)
        return api_fail(err, -EBUSY, API_CODE_CONFLICT,
                        "workspace '%s' is being created; remove it once its create has ended", id);
    RemoveJob *j = calloc(1, sizeof *j);
    if (!j || !(j->id = strdup(id))) {
        free(j);
        return -ENOMEM;
    }
    j->agent = a;
    j->destroy = destroy;
    j->op = api_operation_ref(op);
    j->step = op ? api_operation_step(op, "stopping the FUSE daemon") : -1;
    int r = a->supervisor ? supervisor_remove(a->supervisor, id, on_removed, j) : -ENOENT;
    if (r == -EALREADY) {
        remove_job_free(j);
        return api_fail(err, r, API_CODE_CONFLICT, "workspace '%s' is already being removed", id);
    }
    if (r == -ENOENT)
        on_removed(a->supervisor, id, j); /* no daemon to stop */
    else if (r < 0) {
        remove_job_free(j);
        return r;
    }
    return 1;
}

/* ---- restart ------------------------------------------------------------- */

int agent_workspace_restart(Agent *a, const char *id, bool queue, ApiOperation *op, ApiError *err) {
    WorkspaceStatus st;
    if (!a->supervisor || supervisor_get_status(a->supervisor, id, &st) < 0)
        return api_fail(err, -ENOENT, API_CODE_NOT_FOUND, "no supervised workspace '%s'", id);
    /* As a create: a restart that would only wait for a volume to come
     * back is refused with the reason unless the client queues it. */
    char why[512];
    if (!queue && agent_workspace_blocker(a, id, why, sizeof why))
        return api_fail(err, -EBUSY, API_CODE_BLOCKED,
                        "workspace '%s' cannot be restarted now: %s; its daemon starts by itself once "
                        "it is back in service (or queue the restart: ?queue=true)", id, why);
    pid_t old = st.pid;
    int r = supervisor_restart(a->supervisor, id);
    if (r == -EBUSY)
        return api_fail(err, r, API_CODE_CONFLICT, "workspace '%s' is being stopped", id);
    if (r < 0)
        return r;
    log_info("workspace %s: restart requested through the API", id);
    if (op) {
        _cleanup_free_ char *res = NULL;
        if (asprintf(&res, "/v1/workspaces/%s", id) >= 0)
            (void) api_operation_set_resource(op, res);
    }
    r = add_waiter(a, id, WAIT_RUNNING, old, op, 200, "restarting the FUSE daemon");
    if (r < 0)
        return r;
    check_waiters(a, id);
    return 1;
}

/* ---- the workspace's API object -------------------------------------------- */

json_object *agent_labels_json(char *const *labels) {
    json_object *o = json_object_new_object();
    for (char *const *l = labels; o && l && *l; l++) {
        const char *eq = strchr(*l, '=');
        if (!eq)
            continue;
        _cleanup_free_ char *k = strndup(*l, (size_t) (eq - *l));
        if (k)
            json_object_object_add(o, k, json_object_new_string(eq + 1));
    }
    return o;
}

/* The workspace's cache (docs/api.md, "The cache"): where it is mounted,
 * whether it is now, and the environment that points tools at it. null
 * when the layout has none or the daemon was not started with one. */
static json_object *cache_json(Agent *a, const WorkspaceRecord *w) {
    const Layout *l = agent_layout(a);
    WorkspaceStatus st;
    if (!w->mountpoint || !a->supervisor || supervisor_get_status(a->supervisor, w->id, &st) < 0 ||
        st.cache_state == SUPERVISOR_CACHE_NONE)
        return NULL;
    _cleanup_free_ char *path = NULL, *source = NULL;
    _cleanup_strv_free_ char **env = NULL;
    if (asprintf(&path, "%s/%s", w->mountpoint, l->workspace.cache_path ?: LAYOUT_CACHE_PATH) < 0 ||
        place_cache_environment(path, &env) < 0)
        return NULL;
    if (w->volume)
        (void) place_cache_source(l, w->volume, w->id, &source);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "path", json_object_new_string(path));
    json_object_object_add(o, "source", source ? json_object_new_string(source) : NULL);
    json_object_object_add(o, "state", json_object_new_string(supervisor_cache_state_to_string(st.cache_state)));
    json_object_object_add(o, "error", st.cache_message ? json_object_new_string(st.cache_message) : NULL);
    json_object_object_add(o, "environment", agent_labels_json(env));
    return o;
}

json_object *agent_workspace_json(Agent *a, const WorkspaceRecord *w) {
    StateRecord *record = agent_record(a);
    json_object *o = json_object_new_object();
#define J_ADD(k, v) json_object_object_add(o, (k), (v))
#define JSTR(s) ((s) ? json_object_new_string(s) : NULL)
    J_ADD("id", JSTR(w->id));
    J_ADD("tenant", JSTR(w->tenant));
    J_ADD("quota_bytes", json_object_new_uint64(w->quota));
    J_ADD("quota", agent_quota_workspace_json(a, w));
    J_ADD("created_at", json_object_new_int64((int64_t) (w->created_at / USEC_PER_SEC)));
    J_ADD("active", json_object_new_boolean(w->active));
    J_ADD("creating", json_object_new_boolean(w->creating));
    J_ADD("volume", JSTR(w->volume));
    J_ADD("cgroup", agent_cgroups_workspace_json(a, w->id));
    J_ADD("state_dir", JSTR(w->state_dir));
    J_ADD("mountpoint", JSTR(w->mountpoint));
    /* Where the tools find the store inside the mount (the reference
     * daemon shows it there); null: the workspace has none. */
    _cleanup_free_ char *store_path = NULL;
    if (w->mountpoint && agent_workspace_has_store(a, w))
        (void) asprintf(&store_path, "%s/.layoutd-store", w->mountpoint);
    J_ADD("package_store", JSTR(store_path));
    J_ADD("cache", cache_json(a, w));
    J_ADD("labels", agent_labels_json(w->labels));
    /* Flush scope: every active workspace sharing the volume, itself too. */
    json_object *neigh = json_object_new_array();
    size_t scope = 0;
    for (size_t i = 0; i < record->n_workspaces; i++) {
        const WorkspaceRecord *x = record->workspaces[i];
        if (!x->active || !streq_ptr(x->volume, w->volume))
            continue;
        scope++;
        if (!streq(x->id, w->id))
            json_object_array_add(neigh, json_object_new_string(x->id));
    }
    J_ADD("neighbours", neigh);
    J_ADD("flush_scope", json_object_new_int64((int64_t) (w->active ? scope : 0)));
#undef J_ADD

    json_object *d = json_object_new_object();
#define D_ADD(k, v) json_object_object_add(d, (k), (v))
    WorkspaceStatus st;
    if (a->supervisor && supervisor_get_status(a->supervisor, w->id, &st) >= 0) {
        usec_t now = now_usec(CLOCK_MONOTONIC);
        D_ADD("state", JSTR(supervisor_state_to_string(st.state)));
        D_ADD("pid", st.pid > 0 ? json_object_new_int(st.pid) : NULL);
        D_ADD("adopted", json_object_new_boolean(st.adopted));
        D_ADD("restarts", json_object_new_int64(st.restarts));
        if (st.exited) {
            json_object *e = json_object_new_object();
            json_object_object_add(e, "status", st.exit_status >= 0 ? json_object_new_int(st.exit_status) : NULL);
            json_object_object_add(e, "signal", st.exit_signal ? JSTR(sigabbrev_np(st.exit_signal)) : NULL);
            D_ADD("last_exit", e);
        } else
            D_ADD("last_exit", NULL);
        D_ADD("uptime_seconds",
              st.running_since ? json_object_new_double((double) (now - st.running_since) / USEC_PER_SEC) : NULL);
        D_ADD("ready_latency_seconds",
              st.ready_latency ? json_object_new_double((double) st.ready_latency / USEC_PER_SEC) : NULL);
        D_ADD("next_restart_in_seconds",
              st.state == SUPERVISOR_BACKOFF ? json_object_new_double((double) st.next_delay / USEC_PER_SEC) : NULL);
        json_object *delays = json_object_new_array();
        for (unsigned i = 0; i < st.n_delays; i++)
            json_object_array_add(delays, json_object_new_double((double) st.delays[i] / USEC_PER_SEC));
        D_ADD("backoff_delays_seconds", delays);
        D_ADD("hangs", json_object_new_int64(st.hangs));
        char why[512];
        const char *blocker = st.state == SUPERVISOR_BLOCKED ? agent_workspace_blocker(a, w->id, why, sizeof why) : NULL;
        D_ADD("blocked_by", blocker ? JSTR(blocker) : NULL);
    } else {
        D_ADD("state", JSTR(w->creating ? "creating" : w->active ? "unsupervised" : "removed"));
        D_ADD("restarts", json_object_new_int64(w->daemon.restarts));
    }
#undef D_ADD
#undef JSTR
    json_object_object_add(o, "daemon", d);
    return o;
}

/* ---- the supervisor's callbacks -------------------------------------------- */

/* A daemon's line may carry a "<N>" priority prefix (the sd-daemon(3)
 * convention); the rest are LOG_INFO. */
static int line_priority(const char **line, int level) {
    const char *l = *line;
    if (l[0] == '<' && l[1] >= '0' && l[1] <= '7' && l[2] == '>') {
        *line = l + 3;
        return l[1] - '0';
    }
    return level;
}

static void on_log(const char *id, int level, const char *line, void *userdata) {
    Agent *a = userdata;
    if (!id) {
        log_internal(level, 0, "supervisor: %s", line);
        return;
    }
    /* The daemon's own lines come as the daemon's in the journal (its
     * name and pid), with the workspace and its volume as fields:
     * `journalctl LAYOUTD_WORKSPACE=ws-1`. The supervisor's messages about
     * a workspace carry the fields too. */
    WorkspaceRecord *w = state_record_find_workspace(agent_record(a), id);
    LogContext c = { .workspace = id, .volume = w ? w->volume : NULL };
    WorkspaceStatus st;
    const char *cmd = agent_layout(a)->workspace.command ? agent_layout(a)->workspace.command[0] : NULL;
    if (level == LOG_INFO && a->supervisor && supervisor_get_status(a->supervisor, id, &st) >= 0 && st.pid > 0) {
        level = line_priority(&line, level);
        c.pid = st.pid;
        c.identifier = cmd && strrchr(cmd, '/') ? strrchr(cmd, '/') + 1 : cmd;
    }
    log_context(level, 0, &c, "workspace %s: %s", id, line);
}

static void on_state_change(const char *id, SupervisorState old_state, SupervisorState new_state, void *userdata) {
    Agent *a = userdata;
    int level = new_state == SUPERVISOR_FAILED                                        ? LOG_ERR
                : new_state == SUPERVISOR_BACKOFF || new_state == SUPERVISOR_BLOCKED ? LOG_WARNING
                                                                                    : LOG_INFO;
    char why[512] = "";
    const char *blocker = new_state == SUPERVISOR_BLOCKED ? agent_workspace_blocker(a, id, why, sizeof why) : NULL;
    log_workspace(level, id, new_state == SUPERVISOR_FAILED ? LAYOUTD_MESSAGE_CRASH_LOOP : NULL,
                  "workspace %s: %s -> %s%s%s", id, supervisor_state_to_string(old_state),
                  supervisor_state_to_string(new_state),
                  new_state == SUPERVISOR_FAILED ? " (crash loop: `layoutctl restart` brings it back)"
                  : blocker                      ? ": not started while "
                                                 : "",
                  blocker ?: "");
    json_object *f = json_object_new_object();
    json_object_object_add(f, "workspace", json_object_new_string(id));
    json_object_object_add(f, "from", json_object_new_string(supervisor_state_to_string(old_state)));
    json_object_object_add(f, "to", json_object_new_string(supervisor_state_to_string(new_state)));
    agent_event(a, "workspace.state", f);
    if (new_state == SUPERVISOR_STARTING || new_state == SUPERVISOR_RUNNING) {
        WorkspaceStatus st;
        if (a->supervisor && supervisor_get_status(a->supervisor, id, &st) >= 0)
            agent_modules_daemon_running(a, id, st.pid);
    }
    check_waiters(a, id);
    if (a->ready)
        agent_update_status(a);
}

static void on_persist(const char *id, const DaemonRecord *rec, void *userdata) {
    Agent *a = userdata;
    WorkspaceRecord *w = state_record_find_workspace(agent_record(a), id);
    if (!w)
        return; /* removed meanwhile */
    if (memcmp(&w->daemon, rec, sizeof *rec) == 0)
        return;
    w->daemon = *rec;
    agent_persist(a);
}

static bool may_start(const char *id, void *userdata) {
    Agent *a = userdata;
    char why[512];
    return !agent_workspace_blocker(a, id, why, sizeof why);
}

static void on_hang(const char *id, unsigned waiting, void *userdata) {
    Agent *a = userdata;
    log_warning("workspace %s: FUSE connection hung: %u request(s) waiting without progress for %s", id, waiting,
                agent_layout(a)->workspace.restart_on_hang ? "too long, restarting"
                                                           : "too long (restart_on_hang is off)");
}

const SupervisorCallbacks agent_supervisor_callbacks = {
    .on_log = on_log,
    .on_state_change = on_state_change,
    .on_persist = on_persist,
    .on_hang = on_hang,
    .may_start = may_start,
};

static void workspaces_metrics(Agent *a, MetricsWriter *w) {
    StateRecord *record = agent_record(a);
    size_t n = a->supervisor ? supervisor_count(a->supervisor) : 0;
    WorkspaceStatus *sts = calloc(MAX(n, 1u), sizeof(WorkspaceStatus));
    if (!sts)
        return;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (supervisor_get_status_by_index(a->supervisor, i, &sts[m]) >= 0)
            m++;
    (void) metrics_writer_family(w, "layoutd_workspace_up", METRIC_GAUGE,
                                 "1 when the workspace's FUSE daemon is running and mounted");
    for (size_t i = 0; i < m; i++) {
        const WorkspaceRecord *rec = state_record_find_workspace(record, sts[i].id);
        (void) metrics_writer_sample(w, (const char *const[]) { "workspace", sts[i].id, "volume",
                                                                rec && rec->volume ? rec->volume : "", NULL },
                                     sts[i].state == SUPERVISOR_RUNNING);
    }
    (void) metrics_writer_family(w, "layoutd_workspace_restarts_total", METRIC_COUNTER,
                                 "Restarts of the workspace's FUSE daemon");
    for (size_t i = 0; i < m; i++)
        (void) metrics_writer_sample(w, (const char *const[]) { "workspace", sts[i].id, NULL }, sts[i].restarts);
    (void) metrics_writer_family(w, "layoutd_workspace_state", METRIC_GAUGE,
                                 "1 for the workspace's current supervision state");
    for (size_t i = 0; i < m; i++)
        (void) metrics_writer_sample(w, (const char *const[]) { "workspace", sts[i].id, "state",
                                                                supervisor_state_to_string(sts[i].state), NULL },
                                     1);
    (void) metrics_writer_family(w, "layoutd_workspace_flush_scope", METRIC_GAUGE,
                                 "Workspaces sharing this workspace's volume, itself included");
    for (size_t i = 0; i < m; i++) {
        const WorkspaceRecord *rec = state_record_find_workspace(record, sts[i].id);
        if (rec && rec->volume)
            (void) metrics_writer_sample(w, (const char *const[]) { "workspace", sts[i].id, NULL },
                                         (double) state_record_count_workspaces(record, rec->volume));
    }
    (void) metrics_writer_family(w, "layoutd_workspace_objects_missing", METRIC_GAUGE,
                                 "Objects the workspace's files reference that the content pool lacks (its daemon's "
                                 "count); those files read as I/O errors");
    for (size_t i = 0; i < m; i++) {
        const DaemonStats *ds = agent_daemon_stats(a, sts[i].id);
        if (ds && ds->known)
            (void) metrics_writer_sample(w, (const char *const[]) { "workspace", sts[i].id, NULL },
                                         (double) ds->objects_missing);
    }
    free(sts);
    (void) metrics_writer_family(w, "layoutd_workspace_creates_total", METRIC_COUNTER,
                                 "Workspace creations asked through the API");
    (void) metrics_writer_sample(w, NULL, a->workspaces ? (double) a->workspaces->creates : 0);
    (void) metrics_writer_family(w, "layoutd_workspace_create_failures_total", METRIC_COUNTER,
                                 "Workspace creations refused or failed");
    (void) metrics_writer_sample(w, NULL, a->workspaces ? (double) a->workspaces->create_failures : 0);
}

/* Every supervised workspace: its daemon's state, the objects it misses
 * (its daemon's figures), why it is blocked. One allocation: the array,
 * then a 512-byte wording of each blocker. */
#define BLOCKER_SIZE 512
static int workspaces_problems(Agent *a, ProblemInputs *in) {
    size_t n = a->supervisor ? supervisor_count(a->supervisor) : 0;
    ProblemWorkspace *wss = calloc(MAX(n, 1u), sizeof(ProblemWorkspace) + BLOCKER_SIZE);
    if (!wss)
        return -ENOMEM;
    char *why = (char *) (wss + MAX(n, 1u));
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        WorkspaceStatus st;
        if (supervisor_get_status_by_index(a->supervisor, i, &st) < 0)
            continue;
        ProblemWorkspace *w = &wss[m++];
        *w = (ProblemWorkspace) {
            .id = st.id,
            .state = st.state == SUPERVISOR_FAILED    ? PROBLEM_DAEMON_CRASH_LOOP
                     : st.state == SUPERVISOR_BACKOFF ? PROBLEM_DAEMON_BACKOFF
                     : st.state == SUPERVISOR_BLOCKED ? PROBLEM_DAEMON_BLOCKED
                                                      : PROBLEM_DAEMON_OK,
        };
        const DaemonStats *ds = agent_daemon_stats(a, st.id);
        if (ds && ds->known) {
            w->objects_missing = ds->objects_missing;
            w->missing_example = ds->missing && ds->missing[0] ? ds->missing[0] : NULL;
        }
        if (w->state == PROBLEM_DAEMON_BLOCKED)
            w->blocker = agent_workspace_blocker(a, st.id, why + i * BLOCKER_SIZE, BLOCKER_SIZE);
        const WorkspaceRecord *rec = state_record_find_workspace(agent_record(a), st.id);
        if (rec)
            (void) agent_quota_problems(a, rec, &w->quota_used, &w->quota_limit);
    }
    in->workspaces = wss;
    in->n_workspaces = m;
    return 0;
}

/* The loop is over: the carves' jobs were abandoned without calling back
 * (agent_jobs_abandon runs after this), so the carves and the creates
 * waiting on them are ours to free, as are the waiters; their operations
 * are only unreferenced (the API goes next). */
static void workspaces_free(Agent *a) {
    AgentWorkspaces *ws = a->workspaces;
    if (!ws)
        return;
    while (ws->carves) {
        PendingCarve *c = ws->carves;
        ws->carves = c->next;
        while (c->creates) {
            PendingCreate *pc = c->creates;
            c->creates = pc->next;
            pending_create_free(pc);
        }
        free(c->name);
        free(c);
    }
    while (ws->waiters) {
        WorkspaceWaiter *w = ws->waiters;
        ws->waiters = w->next;
        waiter_free(w);
    }
    free(ws->place_extras);
    a->workspaces = mfree(ws);
}

const AgentModule agent_workspaces_module = {
    .name = "workspaces",
    .when_up = true,
    .start = workspaces_start,
    .layout_changed = workspaces_layout_changed,
    .free = workspaces_free,
    .observed = workspaces_observed,
    .metrics = workspaces_metrics,
    .problems = workspaces_problems,
};
