/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The mount table's changes as loop events; see mount-monitor.h. */
#include <errno.h>
#include <stdlib.h>

#include <libmount.h>

#include "mount-monitor.h"

struct MountMonitor {
    struct libmnt_monitor *mn;
    sd_event_source *source;
    MountMonitorCallback cb;
    void *userdata;
};

static int on_change(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
    MountMonitor *m = userdata;
    /* Drain every pending change first (libmount re-reads nothing for
     * it), so that a burst is one callback. */
    bool changed = false;
    while (mnt_monitor_next_change(m->mn, NULL, NULL) == 0)
        changed = true;
    if (changed && m->cb)
        m->cb(m->userdata);
    return 0;
}

int mount_monitor_new(sd_event *e, MountMonitorCallback cb, void *userdata, MountMonitor **ret) {
    MountMonitor *m = calloc(1, sizeof(*m));
    if (!m)
        return -ENOMEM;
    m->cb = cb;
    m->userdata = userdata;
    m->mn = mnt_new_monitor();
    int r = m->mn ? mnt_monitor_enable_kernel(m->mn, 1) : -ENOMEM;
    int fd = r >= 0 ? mnt_monitor_get_fd(m->mn) : r;
    if (fd < 0) {
        mount_monitor_free(m);
        return fd;
    }
    /* The monitor's fd is an epoll set of its own: readable when the
     * kernel's table changed. libmount owns and closes it. */
    r = sd_event_add_io(e, &m->source, fd, EPOLLIN, on_change, m);
    if (r < 0) {
        mount_monitor_free(m);
        return r;
    }
    *ret = m;
    return 0;
}

MountMonitor *mount_monitor_free(MountMonitor *m) {
    if (!m)
        return NULL;
    m->source = sd_event_source_disable_unref(m->source);
    mnt_unref_monitor(m->mn);
    free(m);
    return NULL;
}
