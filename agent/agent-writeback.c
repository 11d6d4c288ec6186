/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The dirty-page limit of each workspace's FUSE mount (layout key
 * workspace.writeback, docs/layout.md). With the writeback cache, the
 * kernel gives every FUSE mount a bdi (/sys/class/bdi/<st_dev>/) limited
 * to 1 % of the dirty budget with strict_limit, so a large write is
 * throttled long before memory is short. The agent owns the mounts, so it
 * sets each one's limits once its daemon runs (started, restarted or
 * re-adopted after an agent restart) and again after a reload, and reads
 * them back for the workspace's API object.
 *
 * The writes happen on the event loop: a bdi attribute is a value behind
 * a spinlock in the kernel (bdi_set_max_ratio/max_bytes), not I/O, so a
 * write returns at once even while the mount's daemon is stuck.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/sysmacros.h>

#include "agent.h"
#include "bdi.h"
#include "log.h"
#include "util.h"

/* A new FUSE mount's bdi (fs/fuse/inode.c, fuse_bdi_init): what a knob the
 * layout leaves unset goes back to, so that a reload that drops a knob
 * does not leave the old value on the running mounts. */
#define FUSE_BDI_MAX_RATIO 1
#define FUSE_BDI_STRICT_LIMIT 1

typedef struct WsWriteback {
    char *id;
    dev_t dev;                   /* the mount the values below are of, 0 none */
    bool has_limits;             /* read back after the last apply */
    BdiLimits limits;
    char *error;                 /* why the last apply failed, or NULL */
} WsWriteback;

struct AgentWriteback {
    WsWriteback *ws;
    size_t n_ws;
};

static WsWriteback *ws_get(Agent *a, const char *id, bool create) {
    AgentWriteback *m = a->writeback;
    for (size_t i = 0; m && i < m->n_ws; i++)
        if (streq(m->ws[i].id, id))
            return &m->ws[i];
    if (!create)
        return NULL;
    if (!m) {
        if (!(m = calloc(1, sizeof(*m))))
            return NULL;
        a->writeback = m;
    }
    WsWriteback *t = realloc(m->ws, sizeof(*t) * (m->n_ws + 1));
    if (!t)
        return NULL;
    m->ws = t;
    WsWriteback *w = &t[m->n_ws];
    *w = (WsWriteback) { .id = strdup(id) };
    if (!w->id)
        return NULL;
    m->n_ws++;
    return w;
}

static void ws_done(WsWriteback *w) {
    free(w->id);
    free(w->error);
}

/* The layout's knobs, the FUSE defaults for the unset ones; a knob this
 * kernel lacks is left out when the layout does not ask for it. */
static WritebackLimits wanted(const WritebackLimits *l, const BdiLimits *cur) {
    WritebackLimits w = *l;
    if (w.max_ratio < 0 && w.max_bytes == 0)
        w.max_ratio = FUSE_BDI_MAX_RATIO;
    if (w.strict_limit < 0 && cur->has_strict_limit)
        w.strict_limit = FUSE_BDI_STRICT_LIMIT;
    return w;
}

static void set_error(WsWriteback *w, const char *fmt, ...) _printf_(2, 3);
static void set_error(WsWriteback *w, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    free(w->error);
    if (vasprintf(&w->error, fmt, ap) < 0)
        w->error = NULL;
    va_end(ap);
}

/* Applies the layout's limits to the workspace's mount dev and reads them
 * back. A failure is logged and kept for the API; the daemon serves on
 * with the limits it has (read back for the API). */
static void apply(Agent *a, const char *id, dev_t dev) {
    WsWriteback *w = ws_get(a, id, true);
    if (!w) {
        log_oom();
        return;
    }
    w->dev = dev;
    w->has_limits = false;
    w->error = mfree(w->error);

    BdiLimits cur;
    int r = bdi_read_limits(dev, &cur);
    if (r < 0) {
        /* -ENOENT: no bdi (a mount without one, or gone meanwhile). */
        set_error(w, "cannot read the bdi %u:%u: %s", major(dev), minor(dev), strerror(-r));
        log_warning("workspace %s: %s", id, w->error);
        return;
    }
    WritebackLimits want = wanted(&agent_layout(a)->workspace.writeback, &cur);
    r = bdi_apply_limits(dev, &want);
    if (r < 0) {
        const char *why = r == -EOPNOTSUPP                  ? "this kernel lacks max_bytes or strict_limit (Linux 6.2+)"
                          : r == -EINVAL && want.max_bytes > 0 ? "the kernel refused it (max_bytes above the dirty limit?)"
                          : r == -EIO                          ? "the kernel did not keep it"
                                                               : strerror(-r);
        set_error(w, "cannot set the bdi %u:%u to max_ratio %d, max_bytes %" PRIu64 ", strict_limit %d: %s",
                  major(dev), minor(dev), want.max_ratio, want.max_bytes, want.strict_limit, why);
        log_warning("workspace %s: %s (the mount serves on with the limits it has)", id, w->error);
    }
    if (bdi_read_limits(dev, &w->limits) >= 0)
        w->has_limits = true;
    if (r >= 0)
        log_debug("workspace %s: FUSE bdi %u:%u max_ratio=%d max_bytes=%" PRIu64 " strict_limit=%d", id,
                  major(dev), minor(dev), w->limits.max_ratio, w->limits.max_bytes, w->limits.strict_limit);
}

static void writeback_daemon_running(Agent *a, const char *id, pid_t pid) {
    WorkspaceStatus st;
    /* Called at STARTING too: the mount (and so its bdi) exists only once
     * the supervisor saw it (RUNNING, with mount_dev). */
    if (pid <= 0 || !a->supervisor || supervisor_get_status(a->supervisor, id, &st) < 0 ||
        st.state != SUPERVISOR_RUNNING || st.mount_dev == 0)
        return;
    apply(a, id, st.mount_dev);
}

static void writeback_layout_changed(Agent *a) {
    size_t n = a->supervisor ? supervisor_count(a->supervisor) : 0;
    for (size_t i = 0; i < n; i++) {
        WorkspaceStatus st;
        if (supervisor_get_status_by_index(a->supervisor, i, &st) >= 0 && st.state == SUPERVISOR_RUNNING &&
            st.mount_dev != 0)
            apply(a, st.id, st.mount_dev);
    }
}

static void writeback_workspace_removed(Agent *a, const char *id) {
    AgentWriteback *m = a->writeback;
    for (size_t i = 0; m && i < m->n_ws; i++)
        if (streq(m->ws[i].id, id)) {
            ws_done(&m->ws[i]);
            m->ws[i] = m->ws[--m->n_ws];
            return;
        }
}

static void writeback_free(Agent *a) {
    AgentWriteback *m = a->writeback;
    if (!m)
        return;
    for (size_t i = 0; i < m->n_ws; i++)
        ws_done(&m->ws[i]);
    free(m->ws);
    a->writeback = mfree(m);
}

json_object *agent_writeback_workspace_json(Agent *a, const char *id) {
    WsWriteback *w = ws_get(a, id, false);
    WorkspaceStatus st;
    /* Only for the mount that runs now: a daemon that died took its bdi. */
    if (!w || !a->supervisor || supervisor_get_status(a->supervisor, id, &st) < 0 ||
        st.state != SUPERVISOR_RUNNING || st.mount_dev != w->dev)
        return NULL;
    json_object *o = json_object_new_object();
    char bdi[32];
    snprintf(bdi, sizeof bdi, "%u:%u", major(w->dev), minor(w->dev));
    json_object_object_add(o, "bdi", json_object_new_string(bdi));
    if (w->has_limits) {
        json_object_object_add(o, "max_ratio", json_object_new_int(w->limits.max_ratio));
        json_object_object_add(o, "max_bytes",
                               w->limits.has_max_bytes ? json_object_new_uint64(w->limits.max_bytes) : NULL);
        json_object_object_add(o, "strict_limit", w->limits.has_strict_limit
                                                      ? json_object_new_boolean(w->limits.strict_limit > 0)
                                                      : NULL);
    }
    json_object_object_add(o, "error", w->error ? json_object_new_string(w->error) : NULL);
    return o;
}

const AgentModule agent_writeback_module = {
    .name = "writeback",
    .layout_changed = writeback_layout_changed,
    .free = writeback_free,
    .daemon_running = writeback_daemon_running,
    .workspace_removed = writeback_workspace_removed,
};
