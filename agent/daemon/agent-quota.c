/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Per-workspace quotas: XFS project quotas on the state volumes (see
 * src/dev/quota.h and docs/layout.md, "Quotas"). Placement gives each
 * workspace a project id and sets its limit when it makes the directory;
 * this module reads the usage (with the flush probe, in its worker: a
 * quotactl may read the quota file on a busy volume), reports it (the
 * workspace's JSON, metrics, a problem at 90 %), says whether this host
 * can enforce quotas at all, and changes a limit online (a worker job:
 * setting one commits a transaction on the volume).
 *
 * What the kernel counts is what the workspace's daemon keeps on the
 * state volume: small files, stubs, and large files until the content
 * pool takes them. The pool's share is the daemon's own figure
 * (pool_share_bytes of its stats), reported beside the quota and not
 * enforced by it.
 */
#include <errno.h>
#include <stdlib.h>

#include "agent.h"
#include "log.h"
#include "place-workspaces.h"
#include "quota.h"
#include "util.h"

#define QUOTA_ALERT_PERCENT 90

typedef struct QuotaEntry {
    char *id;
    QuotaUsage usage;
    int error;                   /* errno of the latest read, 0 */
    bool known;
} QuotaEntry;

struct AgentQuota {
    QuotaEntry *entries;
    size_t n;
    struct QuotaChange **changes; /* the changes this agent runs now, one
                                     per workspace at most */
    size_t n_changes;
    char **stalled;              /* ids whose recorded change failed to
                                    complete since the last start */
    bool started;
};

static QuotaEntry *entry_find(Agent *a, const char *id) {
    AgentQuota *q = a->quota;
    for (size_t i = 0; q && i < q->n; i++)
        if (streq(q->entries[i].id, id))
            return &q->entries[i];
    return NULL;
}

/* The module's state, made on first use. NULL: out of memory. */
static AgentQuota *module_get(Agent *a) {
    if (!a->quota)
        a->quota = calloc(1, sizeof(AgentQuota));
    return a->quota;
}

static QuotaEntry *entry_get(Agent *a, const char *id) {
    AgentQuota *q = module_get(a);
    if (!q)
        return NULL;
    QuotaEntry *e = entry_find(a, id);
    if (e)
        return e;
    QuotaEntry *t = realloc(q->entries, sizeof(QuotaEntry) * (q->n + 1));
    if (!t)
        return NULL;
    q->entries = t;
    e = &q->entries[q->n];
    *e = (QuotaEntry) { .id = strdup(id) };
    if (!e->id)
        return NULL;
    q->n++;
    return e;
}

/* Whether the volume's mount has project quotas enforced, from the
 * cached observation (mountinfo's options: no I/O). */
bool agent_quota_volume_enforces(Agent *a, const char *volume) {
    return volume_observation_enforces_quota(volume ? agent_volume(a, volume) : NULL);
}

json_object *agent_quota_probe_args(Agent *a) {
    StateRecord *record = agent_record(a);
    json_object *arr = json_object_new_array();
    for (size_t i = 0; arr && i < record->n_workspaces; i++) {
        const WorkspaceRecord *w = record->workspaces[i];
        _cleanup_free_ char *mount = NULL;
        if (!w->active || !w->project_id || !agent_quota_volume_enforces(a, w->volume) ||
            layout_mount_path(agent_layout(a), w->volume, &mount) < 0)
            continue;
        json_object *o = json_object_new_object();
        json_object_object_add(o, "id", json_object_new_string(w->id));
        json_object_object_add(o, "mount", json_object_new_string(mount));
        json_object_object_add(o, "project", json_object_new_uint64(w->project_id));
        json_object_array_add(arr, o);
    }
    return arr;
}

void agent_quota_merge(Agent *a, json_object *quotas) {
    for (size_t i = 0; quotas && i < json_object_array_length(quotas); i++) {
        json_object *o = json_object_array_get_idx(quotas, i), *v;
        const char *id = json_object_object_get_ex(o, "id", &v) ? json_object_get_string(v) : NULL;
        QuotaEntry *e = id ? entry_get(a, id) : NULL;
        if (!e)
            continue;
        if (json_object_object_get_ex(o, "error", &v)) {
            e->error = json_object_get_int(v);
            continue;
        }
        e->error = 0;
        e->known = true;
#define U(k) (json_object_object_get_ex(o, #k, &v) ? json_object_get_uint64(v) : 0)
        e->usage = (QuotaUsage) { .limit_bytes = U(limit_bytes), .used_bytes = U(used_bytes),
                                  .limit_inodes = U(limit_inodes), .used_inodes = U(used_inodes) };
#undef U
    }
}

json_object *agent_quota_workspace_json(Agent *a, const WorkspaceRecord *w) {
    json_object *o = json_object_new_object();
    const QuotaEntry *e = entry_find(a, w->id);
    bool enforced = w->project_id && agent_quota_volume_enforces(a, w->volume);
    /* The record's limit is what was asked; the kernel's is what holds
     * (they differ only while a change is under way or failed). */
    json_object_object_add(o, "limit_bytes", json_object_new_uint64(w->quota));
    json_object_object_add(o, "pending_bytes", w->quota_changing ? json_object_new_uint64(w->quota_pending) : NULL);
    json_object_object_add(o, "used_bytes", e && e->known ? json_object_new_uint64(e->usage.used_bytes) : NULL);
    json_object_object_add(o, "limit_inodes", json_object_new_uint64(e && e->known ? e->usage.limit_inodes : 0));
    json_object_object_add(o, "used_inodes", e && e->known ? json_object_new_uint64(e->usage.used_inodes) : NULL);
    json_object_object_add(o, "enforced_by", enforced ? json_object_new_string("xfs-project") : NULL);
    json_object_object_add(o, "project_id", w->project_id ? json_object_new_uint64(w->project_id) : NULL);
    if (e && e->error)
        json_object_object_add(o, "error", json_object_new_string(strerror(e->error)));
    return o;
}

static json_object *quota_status(Agent *a) {
    const char *why = NULL;
    int r = place_quota_support(agent_layout(a), &why);
    StateRecord *record = agent_record(a);
    size_t enforcing = 0, state = 0;
    for (size_t i = 0; i < record->n_volumes; i++)
        if (record->volumes[i]->role == POOL_STATE) {
            state++;
            enforcing += agent_quota_volume_enforces(a, record->volumes[i]->name);
        }
    /* A kernel that has them, with no volume mounted with them yet (all
     * mounted by an older agent), cannot enforce one either: say so. */
    if (r > 0 && state > 0 && enforcing == 0) {
        r = 0;
        why = "no state volume is mounted with project quotas (prjquota); they were mounted before "
              "quotas were enabled: a restart of the volumes (teardown, apply) turns them on";
    }
    json_object *o = json_object_new_object();
    json_object_object_add(o, "supported", json_object_new_boolean(r > 0));
    json_object_object_add(o, "reason", r > 0 ? NULL : json_object_new_string(why ?: strerror(r < 0 ? -r : EINVAL)));
    json_object_object_add(o, "volumes_enforcing", json_object_new_uint64(enforcing));
    return o;
}

int agent_quota_problems(Agent *a, const WorkspaceRecord *w, uint64_t *ret_used, uint64_t *ret_limit) {
    const QuotaEntry *e = entry_find(a, w->id);
    if (!e || !e->known || w->quota == 0 || !e->usage.limit_bytes)
        return 0;
    *ret_used = e->usage.used_bytes;
    *ret_limit = e->usage.limit_bytes;
    return (unsigned __int128) e->usage.used_bytes * 100 >= (unsigned __int128) e->usage.limit_bytes * QUOTA_ALERT_PERCENT;
}

/* ---- an online change -----------------------------------------------------
 *
 * A change is written ahead: the record says a change to N is under way
 * (WorkspaceRecord.quota_pending), durably, before the worker sets the
 * kernel's limit; then the record says N. While it runs, whatever a quota
 * forbids is decided by the larger of the two (workspace_record_quota_bound:
 * no package store at a daemon start in between, whoever respecs it), and
 * a second change of the same workspace is refused. An agent that dies in
 * between finds the intent at its next start and sets the limit again
 * (setting one is idempotent). Such a completion that fails keeps the
 * intent (the kernel may hold either limit, so the larger one goes on
 * deciding) until it succeeds at a later start or reload, or an operator's
 * change replaces it. */

typedef struct QuotaChange {
    Agent *agent;
    char *id;
    uint64_t bytes, before;
    bool was_changing;           /* the intent it replaced (a completion */
    uint64_t was_pending;        /* that failed), put back if it fails */
    ApiOperation *op;            /* NULL: completing an interrupted change */
    bool orphaned;               /* its workspace was removed meanwhile */
} QuotaChange;

static void quota_change_free(QuotaChange *c) {
    if (!c)
        return;
    free(c->id);
    api_operation_unref(c->op);
    free(c);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(QuotaChange *, quota_change_free)

/* A recorded change of id failed to complete: not tried again until the
 * next start or reload (quota_start). */
static void stall(Agent *a, const char *id) {
    AgentQuota *q = a->quota;
    if (q && !strv_contains((const char *const *) q->stalled, id))
        (void) strv_extend(&q->stalled, id);
}

static void stalled_remove(Agent *a, const char *id) {
    AgentQuota *q = a->quota;
    size_t n = q ? strv_length((const char *const *) q->stalled) : 0;
    for (size_t i = 0; i < n; i++)
        if (streq(q->stalled[i], id)) {
            free(q->stalled[i]);
            q->stalled[i] = q->stalled[n - 1];
            q->stalled[n - 1] = NULL;
            return;
        }
}

/* The change of id this agent runs now, or NULL. */
static QuotaChange *change_find(Agent *a, const char *id) {
    AgentQuota *q = a->quota;
    for (size_t i = 0; q && i < q->n_changes; i++)
        if (streq(q->changes[i]->id, id))
            return q->changes[i];
    return NULL;
}

/* c no longer runs (it is ended, or its workspace removed). */
static void change_forget(Agent *a, QuotaChange *c) {
    AgentQuota *q = a->quota;
    for (size_t i = 0; q && i < q->n_changes; i++)
        if (q->changes[i] == c) {
            q->changes[i] = q->changes[--q->n_changes];
            return;
        }
}

/* The workspace the change is for, or NULL when it was removed since. */
static WorkspaceRecord *change_workspace(Agent *a, const QuotaChange *c) {
    return c->orphaned ? NULL : state_record_find_workspace(agent_record(a), c->id);
}

/* The change is over: the record says the quota that holds (c->bytes when
 * SET, else the one before, and the intent it replaced, if any), durably
 * soon, and the daemon's next start follows it (a removed quota gives it
 * its store again). */
static void change_end(Agent *a, QuotaChange *c, bool set) {
    WorkspaceRecord *w = change_workspace(a, c);
    change_forget(a, c);
    if (!w)
        return;
    /* The completion it replaced failed before: it waits for the next
     * start or reload again, not for the next observation. */
    if (!set && c->was_changing)
        stall(a, c->id);
    if (set)
        w->quota = c->bytes;
    w->quota_changing = !set && c->was_changing;
    w->quota_pending = w->quota_changing ? c->was_pending : 0;
    agent_persist(a);
    (void) agent_workspace_respec(a, w);
}

/* The change failed: an operator's leaves the quota as it was (the kernel
 * refused the new limit, or was never asked); a completion keeps its
 * intent, since the dead agent may have set the limit already, and is
 * tried again at the next start or reload. Answers err and frees c. */
static void change_failed(Agent *a, QuotaChange *c, ApiError *err) {
    if (c->op)
        change_end(a, c, false);
    else {
        change_forget(a, c);
        stall(a, c->id);
    }
    log_warning("workspace %s: %s%s", c->id, err->message,
                c->op ? "" : "; the change to it stays recorded and is tried again at the next start or reload "
                             "(`layoutctl quota` replaces it)");
    if (c->op)
        api_operation_fail(c->op, err);
    quota_change_free(c);
}

/* Its workspace was removed while it ran: the record is not touched
 * (quota_workspace_removed dropped the intent). Frees c. */
static void change_removed(Agent *a, QuotaChange *c) {
    ApiError err = {};
    change_forget(a, c);
    api_fail(&err, -ENOENT, API_CODE_REMOVED, "workspace '%s' was removed while its quota changed", c->id);
    if (c->op)
        api_operation_fail(c->op, &err);
    quota_change_free(c);
}

static void on_quota_set(Agent *a, int error, const char *message, ApplyResult *res, json_object *extra,
                         void *userdata) {
    QuotaChange *c = userdata;
    ApiError err = {};
    if (!change_workspace(a, c)) {
        change_removed(a, c);
        return;
    }
    if (error < 0) {
        if (error == -EOPNOTSUPP)
            api_fail(&err, error, API_CODE_NOT_SUPPORTED, "the quota of workspace '%s' cannot be enforced: %s", c->id,
                     message ?: strerror(-error));
        else
            api_fail(&err, error, API_CODE_INTERNAL, "setting the quota of workspace '%s' failed: %s", c->id,
                     message ?: strerror(-error));
        change_failed(a, c, &err);
        return;
    }
    change_end(a, c, true);
    WorkspaceRecord *w = change_workspace(a, c);
    log_info("workspace %s: quota %" PRIu64 " -> %" PRIu64 " bytes%s", c->id, c->before, c->bytes,
             c->op ? "" : " (completing a change an earlier agent began)");
    json_object *f = json_object_new_object();
    json_object_object_add(f, "workspace", json_object_new_string(c->id));
    json_object_object_add(f, "limit_bytes", json_object_new_uint64(c->bytes));
    agent_event(a, "workspace.quota", f);
    /* The usage is read again with the next probe; the limit holds now. */
    QuotaEntry *e = entry_find(a, c->id);
    if (e)
        e->usage.limit_bytes = c->bytes;
    if (c->op && w)
        agent_operation_succeed_saved(a, c->op, 200, agent_workspace_json(a, w));
    quota_change_free(c);
}

/* Queues the quota job for W; on_quota_set ends c. */
static int quota_submit(Agent *a, const WorkspaceRecord *w, QuotaChange *c) {
    _cleanup_free_ char *mount = NULL;
    int r = layout_mount_path(agent_layout(a), w->volume, &mount);
    if (r < 0)
        return r;
    json_object *args = json_object_new_object();
    json_object_object_add(args, "mount", json_object_new_string(mount));
    json_object_object_add(args, "project", json_object_new_uint64(w->project_id));
    json_object_object_add(args, "limit", json_object_new_uint64(c->bytes));
    return agent_job_submit_full(a, WORKER_OP_QUOTA, args, w->volume, NULL, AGENT_JOB_OWN_RESULT, on_quota_set, c);
}

/* The intent is durable (or not): now the kernel's limit. */
static void on_intent_saved(int error, void *userdata) {
    QuotaChange *c = userdata;
    Agent *a = c->agent;
    ApiError err = {};
    if (error == -ECANCELED) { /* the agent is going away: the next one completes it */
        change_forget(a, c);
        quota_change_free(c);
        return;
    }
    WorkspaceRecord *w = change_workspace(a, c);
    if (!w) {
        change_removed(a, c);
        return;
    }
    if (error < 0)
        api_fail(&err, error, API_CODE_RECORD_UNSAVED,
                 "the quota change of workspace '%s' could not be saved: %s; the quota stays %" PRIu64 " bytes",
                 c->id, strerror(-error), c->before);
    else {
        int r = quota_submit(a, w, c);
        if (r >= 0)
            return;
        api_fail(&err, r, API_CODE_INTERNAL, "cannot queue the quota change of workspace '%s': %s", c->id,
                 strerror(-r));
    }
    change_failed(a, c, &err);
}

/* Starts W's change to BYTES (op NULL: completing a recorded one): its
 * intent recorded and the daemon's spec made by it, then the job once
 * that is durable. Returns 1 (op is ended later), <0 (nothing changed). */
static int change_begin(Agent *a, WorkspaceRecord *w, uint64_t bytes, ApiOperation *op) {
    AgentQuota *q = module_get(a);
    _cleanup_(quota_change_freep) QuotaChange *c = calloc(1, sizeof(*c));
    if (!q || !c || !(c->id = strdup(w->id)))
        return -ENOMEM;
    QuotaChange **t = realloc(q->changes, sizeof(*t) * (q->n_changes + 1));
    if (!t)
        return -ENOMEM;
    q->changes = t;
    c->agent = a;
    c->bytes = bytes;
    c->before = w->quota;
    c->op = api_operation_ref(op);
    /* From now on a start of its daemon (a crash, a restart) gets no
     * store if the new quota forbids one; if the supervisor cannot take
     * that spec, the daemon would keep its store: nothing changes. */
    c->was_changing = w->quota_changing;
    c->was_pending = w->quota_pending;
    w->quota_changing = true;
    w->quota_pending = bytes;
    int r = agent_workspace_respec(a, w);
    if (r < 0) {
        w->quota_changing = c->was_changing;
        w->quota_pending = c->was_pending;
        return r;
    }
    agent_persist(a);
    if (op) {
        _cleanup_free_ char *res = NULL;
        if (asprintf(&res, "/v1/workspaces/%s", w->id) >= 0)
            (void) api_operation_set_resource(op, res);
    }
    q->changes[q->n_changes++] = c;
    r = agent_when_saved(a, on_intent_saved, c, NULL);
    if (r < 0) {
        change_end(a, c, false);
        return r;
    }
    TAKE_PTR(c);
    return 1;
}

int agent_quota_set(Agent *a, const char *id, uint64_t bytes, ApiOperation *op, ApiError *err) {
    WorkspaceRecord *w = state_record_find_workspace(agent_record(a), id);
    const char *why = NULL;
    if (!w || !w->active)
        return api_fail(err, -ENOENT, API_CODE_NOT_FOUND, "no workspace '%s'", id);
    if (place_quota_support(agent_layout(a), &why) == 0)
        return api_fail(err, -EOPNOTSUPP, API_CODE_NOT_SUPPORTED,
                        "a quota cannot be enforced here: %s", why);
    if (!w->project_id || !agent_quota_volume_enforces(a, w->volume))
        return api_fail(err, -EOPNOTSUPP, API_CODE_NOT_SUPPORTED,
                        "workspace '%s' is on %s, which does not enforce project quotas (%s)", id,
                        w->volume ?: "?", w->project_id ? "mounted without prjquota" : "it has no project id");
    /* One change at a time: the second would race the first to the
     * kernel, and the record could end saying what the kernel does not.
     * A recorded change that no job runs now (a completion that failed)
     * is replaced. */
    const QuotaChange *running = change_find(a, id);
    if (running)
        return api_fail(err, -EBUSY, API_CODE_QUOTA_CHANGING,
                        "the quota of workspace '%s' is being changed to %" PRIu64 " bytes%s; try again when "
                        "that change has ended (its quota.pending_bytes is null)",
                        id, running->bytes, running->op ? "" : " (completing a change an earlier agent began)");
    /* A workspace with a quota gets no package store (agent-workspaces.c,
     * store_dir): store files count against no workspace's quota. The
     * running daemon keeps the store it was started with, so a first
     * quota for a workspace whose daemon has one is refused rather than
     * left unbounded until the next restart. Whether it has one is asked
     * of the daemon, not of the layout now (an upgrade or a reload may
     * have changed workspace.package_store). Removing a quota is not
     * refused: the workspace gets its store at its daemon's next start. */
    if (w->quota == 0 && bytes > 0 && agent_workspace_has_store(a, w))
        return api_fail(err, -EBUSY, API_CODE_PACKAGE_STORE,
                        "workspace '%s' has a package store (workspace.package_store), and no quota bounds "
                        "the files put there; give a workspace its quota when it is created, or set "
                        "workspace.package_store: false", id);
    int r = change_begin(a, w, bytes, op);
    if (r < 0)
        return api_fail(err, r, API_CODE_INTERNAL, "cannot change the quota of workspace '%s': %s", id,
                        strerror(-r));
    stalled_remove(a, id);
    return r;
}

/* Completes the changes an earlier agent recorded and did not finish,
 * on volumes that enforce quotas now (one that is not mounted yet is
 * tried when it is: quota_observed), except the ones that failed since
 * the last start or reload. A removed workspace's intent is dropped:
 * nothing runs there to bound. */
static void complete_interrupted(Agent *a) {
    StateRecord *record = agent_record(a);
    for (size_t i = 0; i < record->n_workspaces; i++) {
        WorkspaceRecord *w = record->workspaces[i];
        if (!w->quota_changing || change_find(a, w->id))
            continue;
        if (!w->active) {
            w->quota_changing = false;
            w->quota_pending = 0;
            agent_persist(a);
            continue;
        }
        if (!agent_quota_volume_enforces(a, w->volume) ||
            (a->quota && strv_contains((const char *const *) a->quota->stalled, w->id)))
            continue;
        log_notice("workspace %s: completing the change of its quota to %" PRIu64 " bytes that an earlier agent "
                   "began", w->id, w->quota_pending);
        int r = change_begin(a, w, w->quota_pending, NULL);
        if (r < 0) {
            log_warning("workspace %s: cannot complete its quota change: %s; it stays recorded and is tried "
                        "again at the next start or reload", w->id, strerror(-r));
            stall(a, w->id);
        }
    }
}

/* Once the volumes are up, and after every reload: every recorded change
 * is tried again. */
static int quota_start(Agent *a) {
    AgentQuota *q = module_get(a);
    if (!q)
        return log_oom();
    q->stalled = strv_free(q->stalled);
    q->started = true;
    complete_interrupted(a);
    return 0;
}

/* A volume may have come into service (mounted with prjquota). */
static void quota_observed(Agent *a) {
    if (a->quota && a->quota->started && !a->stopping)
        complete_interrupted(a);
}

/* ---- the module ----------------------------------------------------------- */

static void quota_metrics(Agent *a, MetricsWriter *w) {
    StateRecord *record = agent_record(a);
    (void) metrics_writer_family(w, "layoutd_workspace_quota_limit_bytes", METRIC_GAUGE,
                                 "The workspace's quota (0: none)");
    for (size_t i = 0; i < record->n_workspaces; i++)
        if (record->workspaces[i]->active)
            (void) metrics_writer_sample(w, (const char *const[]) { "workspace", record->workspaces[i]->id, NULL },
                                         (double) record->workspaces[i]->quota);
    (void) metrics_writer_family(w, "layoutd_workspace_quota_used_bytes", METRIC_GAUGE,
                                 "Bytes charged to the workspace's project on its state volume");
    for (size_t i = 0; i < record->n_workspaces; i++) {
        const QuotaEntry *e = record->workspaces[i]->active ? entry_find(a, record->workspaces[i]->id) : NULL;
        if (e && e->known)
            (void) metrics_writer_sample(w, (const char *const[]) { "workspace", e->id, NULL },
                                         (double) e->usage.used_bytes);
    }
    (void) metrics_writer_family(w, "layoutd_workspace_quota_used_inodes", METRIC_GAUGE,
                                 "Inodes charged to the workspace's project on its state volume");
    for (size_t i = 0; i < record->n_workspaces; i++) {
        const QuotaEntry *e = record->workspaces[i]->active ? entry_find(a, record->workspaces[i]->id) : NULL;
        if (e && e->known)
            (void) metrics_writer_sample(w, (const char *const[]) { "workspace", e->id, NULL },
                                         (double) e->usage.used_inodes);
    }
}

/* A removed workspace's figures go (an id created again starts afresh). */
static void quota_workspace_removed(Agent *a, const char *id) {
    AgentQuota *q = a->quota;
    /* A change under way ends without touching the record (an id made
     * again is another workspace), and the intent goes with the
     * workspace: a kept one brought back gets the quota it is created
     * with. */
    QuotaChange *c = change_find(a, id);
    if (c) {
        c->orphaned = true;
        change_forget(a, c);
    }
    WorkspaceRecord *w = state_record_find_workspace(agent_record(a), id);
    if (w && w->quota_changing) {
        w->quota_changing = false;
        w->quota_pending = 0;
        agent_persist(a);
    }
    stalled_remove(a, id);
    QuotaEntry *e = entry_find(a, id);
    if (!e)
        return;
    free(e->id);
    *e = q->entries[--q->n];
}

static void quota_free(Agent *a) {
    AgentQuota *q = a->quota;
    if (!q)
        return;
    for (size_t i = 0; i < q->n; i++)
        free(q->entries[i].id);
    free(q->entries);
    free(q->changes);             /* each is its job's or waiter's */
    strv_free(q->stalled);
    a->quota = mfree(q);
}

/* /v1/status's "quotas": {supported, reason, volumes_enforcing}. */
static void quota_status_json(Agent *a, json_object *status) {
    json_object_object_add(status, "quotas", quota_status(a));
}

const AgentModule agent_quota_module = {
    .name = "quota",
    .when_up = true,
    .start = quota_start,
    .observed = quota_observed,
    .free = quota_free,
    .workspace_removed = quota_workspace_removed,
    .metrics = quota_metrics,
    .status_json = quota_status_json,
};
