/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Workspaces in the agent: at start, reconcile the record with the state
 * volumes' directories, create the layout's static workspaces, and hand every
 * active workspace to the supervisor (which re-adopts the daemons that
 * survived us, and restarts the rest). The supervisor's callbacks land here:
 * daemon output goes to the log tagged with the workspace id, and daemon
 * identities go into the record.
 */
#include <inttypes.h>

#include "agent.h"
#include "argv.h"
#include "log.h"
#include "place-shard.h"
#include "place-workspaces.h"
#include "util.h"

void agent_persist(Agent *a) {
    int r = state_record_save(a->record, a->record_path);
    if (r < 0)
        log_error_errno(r, "Failed to save the record %s, the change is kept in memory only: %m",
                        a->record_path);
}

int agent_workspace_spawn(Agent *a, const WorkspaceRecord *w) {
    _cleanup_strv_free_ char **content = NULL, **argv = NULL;
    int r;

    r = place_content_dirs(a->layout, &content);
    if (r < 0)
        return log_error_errno(r, "workspace %s: cannot list content shards: %m", w->id);
    ArgvValues values = {
        .id = w->id,
        .tenant = w->tenant,
        .state_dir = w->state_dir,
        .content_dirs = (const char *const *) content,
        .mountpoint = w->mountpoint,
        .volume = w->volume,
    };
    r = argv_template_expand((const char *const *) a->layout->workspace.command, &values, &argv);
    if (r < 0)
        return log_error_errno(r, "workspace %s: cannot expand the daemon's command: %m", w->id);

    WorkspaceSpec spec = {};
    supervisor_spec_from_config(&spec, &a->layout->workspace);
    spec.id = w->id;
    spec.argv = argv;
    spec.mountpoint = w->mountpoint;
    spec.shards = (unsigned) strv_length((const char *const *) content);
    r = supervisor_add(a->supervisor, &spec, w->daemon.pid > 0 ? &w->daemon : NULL);
    if (r == -EEXIST)
        return 0;
    if (r < 0)
        return log_error_errno(r, "workspace %s: cannot supervise its daemon: %m", w->id);
    return 0;
}

void agent_place_context(Agent *a, PlaceContext *ret) {
    *ret = (PlaceContext) {
        .layout = a->layout,
        .record = a->record,
        .record_path = a->record_path,
        .carve = agent_carve,
        .carve_userdata = a,
        /* vdo-xfs in read-only mode is degraded: placement skips it. */
        .observe = agent_vdo_place_observe,
        .observe_userdata = a,
    };
}

int agent_workspaces_start(Agent *a) {
    PlaceContext ctx;
    PlaceReconcileReport rep = {};
    int r;

    if (!a->supervisor)
        return 0;
    agent_place_context(a, &ctx);
    r = place_reconcile(&ctx, &rep);
    if (r < 0)
        log_warning_errno(r, "Failed to reconcile workspaces with their directories, ignoring: %m");
    else {
        for (size_t i = 0; i < rep.n_items; i++) {
            const PlaceReconcileItem *it = &rep.items[i];
            log_full_errno(it->kind == PLACE_RECONCILE_ADOPTED ? LOG_NOTICE : LOG_WARNING, 0,
                           "workspace %s on volume %s: %s (%s)", it->name ? it->name : "-",
                           it->volume ? it->volume : "-", place_reconcile_kind_to_string(it->kind),
                           it->path ? it->path : "");
        }
        place_reconcile_report_done(&rep);
    }

    const WorkspaceConfig *wc = &a->layout->workspace;
    for (size_t i = 0; i < wc->n_static_workspaces; i++) {
        const StaticWorkspace *sw = &wc->static_workspaces[i];
        WorkspaceRecord *w = place_workspace_get(a->record, sw->id);
        if (w && w->active)
            continue;
        PlaceCreateRequest req = { .id = sw->id, .tenant = sw->tenant, .quota = sw->quota, .reclaim = true };
        PlaceError err = {};
        r = place_workspace_create(&ctx, &req, NULL, &err);
        if (r < 0)
            log_error_errno(r, "workspace %s (static): not created: %s", sw->id, err.message ? err.message : "%m");
        else
            log_info("workspace %s (static): created", sw->id);
        place_error_done(&err);
    }

    for (size_t i = 0; i < a->record->n_workspaces; i++) {
        const WorkspaceRecord *w = a->record->workspaces[i];
        if (w->active)
            (void) agent_workspace_spawn(a, w);
    }

    r = supervisor_sweep_stale(a->supervisor, wc->mount_root);
    if (r < 0)
        log_warning_errno(r, "Failed to sweep %s for stale FUSE mounts, ignoring: %m", wc->mount_root);
    else if (r > 0)
        log_notice("Cleaned %d stale FUSE mount(s) below %s", r, wc->mount_root);
    return 0;
}

static void on_log(const char *id, int level, const char *line, void *userdata) {
    if (id)
        log_internal(level, 0, "workspace %s: %s", id, line);
    else
        log_internal(level, 0, "supervisor: %s", line);
}

static void on_state_change(const char *id, SupervisorState old_state, SupervisorState new_state,
                            void *userdata) {
    Agent *a = userdata;
    int level = new_state == SUPERVISOR_FAILED ? LOG_ERR : new_state == SUPERVISOR_BACKOFF ? LOG_WARNING : LOG_INFO;
    log_internal(level, 0, "workspace %s: %s -> %s", id, supervisor_state_to_string(old_state),
                 supervisor_state_to_string(new_state));
    if (a->ready)
        agent_update_status(a);
}

static void on_persist(const char *id, const DaemonRecord *rec, void *userdata) {
    Agent *a = userdata;
    WorkspaceRecord *w = state_record_find_workspace(a->record, id);
    if (!w)
        return; /* removed meanwhile */
    if (memcmp(&w->daemon, rec, sizeof *rec) == 0)
        return;
    w->daemon = *rec;
    agent_persist(a);
}

static void on_hang(const char *id, unsigned waiting, void *userdata) {
    Agent *a = userdata;
    log_warning("workspace %s: FUSE connection hung: %u request(s) waiting without progress for %s", id, waiting,
                a->layout->workspace.restart_on_hang ? "too long, restarting" : "too long (restart_on_hang is off)");
}

const SupervisorCallbacks agent_supervisor_callbacks = {
    .on_log = on_log,
    .on_state_change = on_state_change,
    .on_persist = on_persist,
    .on_hang = on_hang,
};
