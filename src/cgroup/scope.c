/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Workspace daemons in systemd scopes, asked for over the system bus (see
 * cgroup.h for why scopes). Calls are asynchronous on the agent's loop;
 * each says how it went through its callback.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "cgroup.h"
#include "util.h"

#define SYSTEMD_PRIVATE "/run/systemd/private"
#define SLICE "layoutd.slice"
#define DEFAULT_ROOT "/var/lib/layoutd"

typedef struct ScopeRequest ScopeRequest;
struct ScopeRequest {
    ScopeManager *manager;
    ScopeRequest *next;
    sd_bus_slot *slot;
    char *unit;
    pid_t pid;
    WorkspaceResources limits;
    bool attaching;          /* second step: the scope existed */
    ScopeDone done;
    void *userdata;
};

struct ScopeManager {
    sd_bus *bus;
    ScopeRequest *requests;
    bool private_bus;        /* on /run/systemd/private (no bus daemon ran) */
};

static void request_free(ScopeRequest *q) {
    ScopeManager *m = q->manager;
    for (ScopeRequest **p = &m->requests; *p; p = &(*p)->next)
        if (*p == q) {
            *p = q->next;
            break;
        }
    sd_bus_slot_unref(q->slot);
    free(q->unit);
    free(q);
}

ScopeManager *scope_manager_free(ScopeManager *m) {
    if (!m)
        return NULL;
    /* Pending calls are forgotten (their callbacks do not run): the agent
     * is going away, and the scopes are systemd's now. */
    while (m->requests)
        request_free(m->requests);
    sd_bus_flush_close_unref(m->bus);
    free(m);
    return NULL;
}

/* systemd's private socket speaks the protocol without a bus daemon in
 * between: what systemctl uses as root when D-Bus is not running. systemd
 * says it is not an interface for other projects, so it is only the
 * fallback for hosts without a system bus (containers, minimal VMs). */
static int open_private(sd_bus **ret) {
    _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
    if (access(SYSTEMD_PRIVATE, F_OK) < 0)
        return -EHOSTDOWN;
    int r = sd_bus_new(&bus);
    if (r < 0)
        return r;
    if ((r = sd_bus_set_address(bus, "unix:path=" SYSTEMD_PRIVATE)) < 0 || (r = sd_bus_start(bus)) < 0)
        return r;
    *ret = TAKE_PTR(bus);
    return 0;
}

int scope_manager_new(sd_event *e, ScopeManager **ret) {
    if (!cgroup_unified())
        return -ENOMEDIUM;
    if (access("/run/systemd/system", F_OK) < 0)
        return -EHOSTDOWN;
    _cleanup_(scope_manager_freep) ScopeManager *m = calloc(1, sizeof(*m));
    if (!m)
        return -ENOMEM;
    /* The system bus, as systemd asks of everyone but itself. */
    int r = sd_bus_open_system(&m->bus);
    if (r < 0) {
        m->bus = NULL;
        r = open_private(&m->bus);
        if (r < 0)
            return r;
        m->private_bus = true;
    }
    r = sd_bus_attach_event(m->bus, e, SD_EVENT_PRIORITY_NORMAL);
    if (r < 0)
        return r;
    *ret = TAKE_PTR(m);
    return 0;
}

bool scope_manager_uses_private_bus(const ScopeManager *m) {
    return m && m->private_bus;
}

int scope_unit_name(const char *root, const char *id, char **ret) {
    if (!root || streq(root, DEFAULT_ROOT))
        return asprintf(ret, "layoutd-ws-%s.scope", id) < 0 ? -ENOMEM : 0;
    /* FNV-1a of the root: short, stable, no dependency. */
    uint32_t h = 2166136261u;
    for (const char *c = root; *c; c++)
        h = (h ^ (unsigned char) *c) * 16777619u;
    return asprintf(ret, "layoutd-ws-%08" PRIx32 "-%s.scope", h, id) < 0 ? -ENOMEM : 0;
}

/* The limits as unit properties ("a(sv)" entries, appended to m). */
static int append_limits(sd_bus_message *m, const WorkspaceResources *l) {
    int r;
    if ((r = sd_bus_message_append(m, "(sv)", "MemoryMax", "t", l->memory_max)) < 0 ||
        (r = sd_bus_message_append(m, "(sv)", "MemoryHigh", "t", l->memory_high)) < 0 ||
        (r = sd_bus_message_append(m, "(sv)", "CPUWeight", "t", (uint64_t) l->cpu_weight)) < 0 ||
        (r = sd_bus_message_append(m, "(sv)", "IOWeight", "t", (uint64_t) l->io_weight)) < 0 ||
        (r = sd_bus_message_append(m, "(sv)", "TasksMax", "t", l->tasks_max)) < 0)
        return r;
    return 0;
}

static int on_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error);

static int call(ScopeRequest *q, sd_bus_message *m) {
    q->slot = sd_bus_slot_unref(q->slot);
    return sd_bus_call_async(q->manager->bus, &q->slot, m, on_reply, q, 30 * USEC_PER_SEC);
}

/* The scope exists already: move the pid into it, then set the limits
 * (SetUnitProperties, runtime only). Both calls go out at once; the
 * second's answer ends the request. */
static int attach(ScopeRequest *q) {
    _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *s = NULL;
    int r = sd_bus_message_new_method_call(q->manager->bus, &m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                           "org.freedesktop.systemd1.Manager", "AttachProcessesToUnit");
    if (r < 0 || (r = sd_bus_message_append(m, "ssau", q->unit, "", 1, (uint32_t) q->pid)) < 0)
        return r;
    r = sd_bus_send(q->manager->bus, m, NULL);
    if (r < 0)
        return r;
    r = sd_bus_message_new_method_call(q->manager->bus, &s, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                       "org.freedesktop.systemd1.Manager", "SetUnitProperties");
    if (r < 0 || (r = sd_bus_message_append(s, "sb", q->unit, 1)) < 0 ||
        (r = sd_bus_message_open_container(s, 'a', "(sv)")) < 0 || (r = append_limits(s, &q->limits)) < 0 ||
        (r = sd_bus_message_close_container(s)) < 0)
        return r;
    q->attaching = true;
    return call(q, s);
}

static int on_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
    ScopeRequest *q = userdata;
    const sd_bus_error *e = sd_bus_message_get_error(reply);
    int r = 0;
    const char *message = NULL;
    if (e && !q->attaching && sd_bus_error_has_name(e, "org.freedesktop.systemd1.UnitExists")) {
        r = attach(q);
        if (r >= 0)
            return 0;
        message = "cannot move the daemon into its existing scope";
    } else if (e) {
        r = -sd_bus_error_get_errno(e) ?: -EIO;
        message = e->message;
    }
    if (q->done)
        q->done(r, message, q->userdata);
    request_free(q);
    return 0;
}

int scope_manager_place(ScopeManager *m, const char *unit, pid_t pid, const char *description,
                        const WorkspaceResources *limits, ScopeDone done, void *userdata) {
    _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL;
    ScopeRequest *q = calloc(1, sizeof(*q));
    if (!q)
        return -ENOMEM;
    *q = (ScopeRequest) { .manager = m, .pid = pid, .limits = *limits, .done = done, .userdata = userdata };
    q->unit = strdup(unit);
    q->next = m->requests;
    m->requests = q;
    int r = q->unit ? 0 : -ENOMEM;
    if (r >= 0)
        r = sd_bus_message_new_method_call(m->bus, &msg, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                           "org.freedesktop.systemd1.Manager", "StartTransientUnit");
    /* "fail": never replace a job of a unit of the same name. */
    if (r >= 0)
        r = sd_bus_message_append(msg, "ss", unit, "fail");
    if (r >= 0)
        r = sd_bus_message_open_container(msg, 'a', "(sv)");
    if (r >= 0)
        r = sd_bus_message_append(msg, "(sv)(sv)(sv)", "Description", "s", description, "Slice", "s", SLICE,
                                  "PIDs", "au", 1, (uint32_t) pid);
    /* Gone once its daemon is, whatever the way it ended, so that the next
     * daemon of the workspace gets a fresh scope of the same name. */
    if (r >= 0)
        r = sd_bus_message_append(msg, "(sv)", "CollectMode", "s", "inactive-or-failed");
    if (r >= 0)
        r = append_limits(msg, limits);
    if (r >= 0)
        r = sd_bus_message_close_container(msg);
    if (r >= 0)
        r = sd_bus_message_append(msg, "a(sa(sv))", 0);
    if (r >= 0)
        r = call(q, msg);
    if (r < 0)
        request_free(q);
    return r;
}
