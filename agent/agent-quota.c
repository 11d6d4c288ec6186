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
    char **changing;             /* ids of the workspaces whose quota this
                                    agent is changing now */
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
 * (setting one is idempotent), so the kernel and the record never stay
 * apart. */

typedef struct QuotaChange {
    Agent *agent;
    char *id;
    usec_t created_at;           /* of the workspace: an id removed and
                                    made again is another workspace */
    uint64_t bytes, before;
    ApiOperation *op;            /* NULL: an interrupted change completed */
} QuotaChange;

/* The workspace the change is for, or NULL when it was removed since. */
static WorkspaceRecord *change_workspace(Agent *a, const QuotaChange *c) {
    WorkspaceRecord *w = state_record_find_workspace(agent_record(a), c->id);
    return w && w->created_at == c->created_at ? w : NULL;
}

static void quota_change_free(QuotaChange *c) {
    if (!c)
        return;
    free(c->id);
    api_operation_unref(c->op);
    free(c);
}

/* Whether this agent runs a change of id now (a restart starts none). */
static bool change_running(Agent *a, const char *id) {
    return a->quota && strv_contains((const char *const *) a->quota->changing, id);
}

static void change_forget(Agent *a, const char *id) {
    AgentQuota *q = a->quota;
    size_t n = q ? strv_length((const char *const *) q->changing) : 0;
    for (size_t i = 0; i < n; i++)
        if (streq(q->changing[i], id)) {
            free(q->changing[i]);
            q->changing[i] = q->changing[n - 1];
            q->changing[n - 1] = NULL;
            return;
        }
}

/* The change is over: the record says the quota that holds (c->bytes when
 * SET, else the one before), durably soon, and the daemon's next start
 * follows it (a removed quota gives it its store again). */
static void change_end(Agent *a, QuotaChange *c, bool set) {
    WorkspaceRecord *w = change_workspace(a, c);
    change_forget(a, c->id);
    if (!w)
        return;
    if (set)
        w->quota = c->bytes;
    w->quota_changing = false;
    w->quota_pending = 0;
    agent_persist(a);
    (void) agent_workspace_respec(a, w);
}

static void change_fail(QuotaChange *c, ApiError *err) {
    log_warning("workspace %s: %s", c->id, err->message);
    if (c->op)
        api_operation_fail(c->op, err);
    quota_change_free(c);
}

static void on_quota_set(Agent *a, int error, const char *message, ApplyResult *res, json_object *extra,
                         void *userdata) {
    QuotaChange *c = userdata;
    ApiError err = {};
    if (error < 0) {
        if (error == -EOPNOTSUPP)
            api_error_set(&err, error, 501, "not_supported", "the quota of workspace '%s' cannot be enforced: %s", c->id,
                          message ?: strerror(-error));
        else
            api_error_set(&err, error, 500, "internal", "setting the quota of workspace '%s' failed: %s", c->id,
                          message ?: strerror(-error));
        change_end(a, c, false);
        change_fail(c, &err);
        return;
    }
    WorkspaceRecord *w = change_workspace(a, c);
    if (!w) {
        change_forget(a, c->id);
        api_error_set(&err, -ENOENT, 409, "removed", "workspace '%s' was removed while its quota changed", c->id);
        change_fail(c, &err);
        return;
    }
    change_end(a, c, true);
    log_info("workspace %s: quota %" PRIu64 " -> %" PRIu64 " bytes%s", c->id, c->before, c->bytes,
             c->op ? "" : " (a change the agent was interrupted in)");
    json_object *f = json_object_new_object();
    json_object_object_add(f, "workspace", json_object_new_string(c->id));
    json_object_object_add(f, "limit_bytes", json_object_new_uint64(c->bytes));
    agent_event(a, "workspace.quota", f);
    /* The usage is read again with the next probe; the limit holds now. */
    QuotaEntry *e = entry_find(a, c->id);
    if (e)
        e->usage.limit_bytes = c->bytes;
    if (c->op)
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
        quota_change_free(c);
        return;
    }
    WorkspaceRecord *w = change_workspace(a, c);
    if (error < 0)
        api_error_set(&err, error, 500, "record_unsaved",
                      "the quota change of workspace '%s' could not be saved: %s; the quota stays %" PRIu64 " bytes",
                      c->id, strerror(-error), c->before);
    else if (!w)
        api_error_set(&err, -ENOENT, 409, "removed", "workspace '%s' was removed while its quota changed", c->id);
    else {
        int r = quota_submit(a, w, c);
        if (r >= 0)
            return;
        api_error_set(&err, r, 500, "internal", "cannot queue the quota change of workspace '%s': %s", c->id,
                      strerror(-r));
    }
    change_end(a, c, false);
    change_fail(c, &err);
}

/* Starts W's change to BYTES: its intent recorded (and the daemon's spec
 * made by it), then the job once that is durable. Returns 1 (op is ended
 * later), <0 (nothing changed). */
static int change_begin(Agent *a, WorkspaceRecord *w, uint64_t bytes, ApiOperation *op) {
    AgentQuota *q = module_get(a);
    QuotaChange *c = calloc(1, sizeof(*c));
    if (!q || !c || !(c->id = strdup(w->id)) || strv_extend(&q->changing, w->id) < 0) {
        quota_change_free(c);
        return -ENOMEM;
    }
    c->agent = a;
    c->created_at = w->created_at;
    c->bytes = bytes;
    c->before = w->quota;
    c->op = api_operation_ref(op);
    if (op) {
        _cleanup_free_ char *res = NULL;
        if (asprintf(&res, "/v1/workspaces/%s", w->id) >= 0)
            (void) api_operation_set_resource(op, res);
    }
    w->quota_changing = true;
    w->quota_pending = bytes;
    /* From now on a start of its daemon (a crash, a restart) gets no
     * store if the new quota forbids one. */
    (void) agent_workspace_respec(a, w);
    agent_persist(a);
    int r = agent_when_saved(a, on_intent_saved, c, NULL);
    if (r < 0) {
        change_end(a, c, false);
        quota_change_free(c);
        return r;
    }
    return 1;
}

int agent_quota_set(Agent *a, const char *id, uint64_t bytes, ApiOperation *op, ApiError *err) {
    WorkspaceRecord *w = state_record_find_workspace(agent_record(a), id);
    const char *why = NULL;
    if (!w || !w->active)
        return api_error_set(err, -ENOENT, 404, "not_found", "no workspace '%s'", id);
    if (place_quota_support(agent_layout(a), &why) == 0)
        return api_error_set(err, -EOPNOTSUPP, 501, "not_supported",
                             "a quota cannot be enforced here: %s", why);
    if (!w->project_id || !agent_quota_volume_enforces(a, w->volume))
        return api_error_set(err, -EOPNOTSUPP, 501, "not_supported",
                             "workspace '%s' is on %s, which does not enforce project quotas (%s)", id,
                             w->volume ?: "?", w->project_id ? "mounted without prjquota" : "it has no project id");
    /* One change at a time: the second would race the first to the
     * kernel, and the record could end saying what the kernel does not. */
    if (w->quota_changing)
        return api_error_set(err, -EBUSY, 409, "quota_changing",
                             "the quota of workspace '%s' is being changed to %" PRIu64
                             " bytes; ask again when that change is answered",
                             id, w->quota_pending);
    /* A workspace with a quota gets no package store (agent-workspaces.c,
     * store_dir): store files count against no workspace's quota. The
     * running daemon keeps the store it was started with, so a first
     * quota for a workspace whose daemon has one is refused rather than
     * left unbounded until the next restart. Whether it has one is asked
     * of the daemon, not of the layout now (an upgrade or a reload may
     * have changed workspace.package_store). Removing a quota is not
     * refused: the workspace gets its store at its daemon's next start. */
    if (w->quota == 0 && bytes > 0 && agent_workspace_has_store(a, w))
        return api_error_set(err, -EBUSY, 409, "package_store",
                             "workspace '%s' has a package store (workspace.package_store), and no quota bounds "
                             "the files put there; give a workspace its quota when it is created, or set "
                             "workspace.package_store: false", id);
    int r = change_begin(a, w, bytes, op);
    if (r < 0)
        return api_error_set(err, r, 500, "internal", "cannot change the quota of workspace '%s': %s", id,
                             strerror(-r));
    return r;
}

/* Completes the changes an earlier agent recorded and did not finish
 * (idempotent: runs once the volumes are up, and after every reload). A
 * removed workspace's intent is dropped: nothing runs there to bound. */
static int quota_start(Agent *a) {
    StateRecord *record = agent_record(a);
    for (size_t i = 0; i < record->n_workspaces; i++) {
        WorkspaceRecord *w = record->workspaces[i];
        if (!w->quota_changing || change_running(a, w->id))
            continue;
        if (!w->active) {
            w->quota_changing = false;
            w->quota_pending = 0;
            agent_persist(a);
            continue;
        }
        log_notice("workspace %s: completing the change of its quota to %" PRIu64 " bytes that the agent was "
                   "interrupted in", w->id, w->quota_pending);
        int r = change_begin(a, w, w->quota_pending, NULL);
        if (r < 0)
            log_warning("workspace %s: cannot complete its quota change: %s", w->id, strerror(-r));
    }
    return 0;
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
    strv_free(q->changing);
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
    .free = quota_free,
    .workspace_removed = quota_workspace_removed,
    .metrics = quota_metrics,
    .status_json = quota_status_json,
};
