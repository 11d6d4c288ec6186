/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <libudev.h>
#include <stdlib.h>

#include "block-monitor.h"

struct BlockMonitor {
    struct udev *udev;
    struct udev_monitor *monitor;
};

BlockMonitor *block_monitor_free(BlockMonitor *m) {
    if (!m)
        return NULL;
    if (m->monitor)
        udev_monitor_unref(m->monitor);
    if (m->udev)
        udev_unref(m->udev);
    free(m);
    return NULL;
}

int block_monitor_new(BlockMonitor **ret) {
    _cleanup_(block_monitor_freep) BlockMonitor *m = calloc(1, sizeof(*m));
    if (!m)
        return -ENOMEM;
    if (!(m->udev = udev_new()))
        return -errno ?: -ENOMEM;
    /* "udev": events after udevd processed them (rules ran, links exist),
     * which is when a fresh observation sees the device as it will stay. */
    if (!(m->monitor = udev_monitor_new_from_netlink(m->udev, "udev")))
        return -errno ?: -ENOMEM;
    int r = udev_monitor_filter_add_match_subsystem_devtype(m->monitor, "block", NULL);
    if (r < 0)
        return r;
    r = udev_monitor_enable_receiving(m->monitor);
    if (r < 0)
        return r;
    *ret = TAKE_PTR(m);
    return 0;
}

int block_monitor_fd(const BlockMonitor *m) {
    return udev_monitor_get_fd(m->monitor);
}

unsigned block_monitor_drain(BlockMonitor *m) {
    unsigned n = 0;
    struct udev_device *d;
    /* The monitor's socket is non-blocking: NULL once it is empty. */
    while ((d = udev_monitor_receive_device(m->monitor))) {
        udev_device_unref(d);
        n++;
    }
    return n;
}
