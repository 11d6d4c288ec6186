/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <libgen.h>
#include <libudev.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "dev-util.h"
#include "udev.h"
#include "util.h"

/*
 * Why this is one function: everything below has two modes, and mixing
 * them is how tools hang (waiting for udev events that never come in a
 * container) or race (using a device udev is still probing). The decision
 * is made here, once, the same way libudev/systemd make it: udevd creates
 * /run/udev/control when it starts listening.
 */
bool udev_is_running(void) {
    const char *e = getenv("LAYOUTD_UDEV");
    if (e && (streq(e, "0") || streq(e, "1")))
        return streq(e, "1");
    return access("/run/udev/control", F_OK) >= 0;
}

static void udev_unrefp(struct udev **u) {
    if (*u)
        udev_unref(*u);
}
static void udev_monitor_unrefp(struct udev_monitor **m) {
    if (*m)
        udev_monitor_unref(*m);
}
static void udev_device_unrefp(struct udev_device **d) {
    if (*d)
        udev_device_unref(*d);
}

/* The kernel's node is there: sysfs entry and the devnode with our rdev. */
static bool kernel_ready(dev_t devno, const char *devnode) {
    _cleanup_free_ char *p = NULL;
    if (dev_sysfs_path(devno, NULL, &p) < 0 || access(p, F_OK) < 0)
        return false;
    if (!devnode)
        return true;
    struct stat st;
    return stat(devnode, &st) >= 0 && S_ISBLK(st.st_mode) && st.st_rdev == devno;
}

/* udev has processed the device's latest event. "initialized" alone is
 * not enough for a reused device (loop3 attached, detached, attached
 * again is initialised from its first life): when the kernel gives
 * disk sequence numbers (5.15+), the one udev recorded must be the
 * current one in sysfs. */
static bool udev_ready(struct udev *udev, dev_t devno) {
    _cleanup_(udev_device_unrefp) struct udev_device *d = udev_device_new_from_devnum(udev, 'b', devno);
    if (!d || !udev_device_get_is_initialized(d))
        return false;
    _cleanup_free_ char *p = NULL;
    uint64_t cur, seen;
    if (dev_sysfs_path(devno, "diskseq", &p) < 0 || dev_read_u64_file(p, &cur) < 0)
        return true; /* no diskseq on this kernel: initialised is all we know */
    const char *s = udev_device_get_property_value(d, "DISKSEQ");
    if (!s || dev_parse_u64(s, &seen) < 0)
        return true; /* udev too old to record it */
    return seen >= cur;
}

static int remaining_ms(usec_t deadline) {
    if (deadline == USEC_INFINITY)
        return -1;
    usec_t n = now_usec(CLOCK_MONOTONIC);
    if (n >= deadline)
        return 0;
    return (int) MIN((deadline - n + USEC_PER_MSEC - 1) / USEC_PER_MSEC, (usec_t) INT32_MAX);
}

static int wait_udev(dev_t devno, const char *devnode, usec_t deadline) {
    _cleanup_(udev_unrefp) struct udev *udev = udev_new();
    if (!udev)
        return -ENOMEM;
    /* Set the monitor up before looking, so an event between the look and
     * the poll is not lost. */
    _cleanup_(udev_monitor_unrefp) struct udev_monitor *mon = udev_monitor_new_from_netlink(udev, "udev");
    if (!mon)
        return -EIO;
    int r = udev_monitor_filter_add_match_subsystem_devtype(mon, "block", NULL);
    if (r < 0)
        return r;
    r = udev_monitor_enable_receiving(mon);
    if (r < 0)
        return r;
    int fd = udev_monitor_get_fd(mon);

    for (;;) {
        if (kernel_ready(devno, devnode) && udev_ready(udev, devno))
            return 0;
        int ms = remaining_ms(deadline);
        if (ms == 0)
            return -ETIMEDOUT;
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        r = poll(&pfd, 1, ms);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return negative_errno();
        }
        if (r == 0)
            return kernel_ready(devno, devnode) && udev_ready(udev, devno) ? 0 : -ETIMEDOUT;
        /* Drain; any event for our device (add/change) re-checks. Other
         * devices' events just loop. */
        struct udev_device *d;
        while ((d = udev_monitor_receive_device(mon)))
            udev_device_unref(d);
    }
}

static int wait_kernel(dev_t devno, const char *devnode, usec_t deadline) {
    /* devtmpfs creates the node inside device_add(), so it is normally
     * there already. If not (a different /dev, a slow mknod by someone
     * else), watch the node's directory with inotify; sysfs does not
     * support inotify, so also re-check on a 50 ms tick, bounded by the
     * deadline. */
    _cleanup_close_ int ifd = -EBADF;
    if (devnode) {
        _cleanup_free_ char *dir = strdup(devnode);
        if (!dir)
            return -ENOMEM;
        ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        if (ifd >= 0 && inotify_add_watch(ifd, dirname(dir), IN_CREATE | IN_ATTRIB | IN_MOVED_TO) < 0)
            ifd = safe_close(ifd);
    }
    for (;;) {
        if (kernel_ready(devno, devnode))
            return 0;
        int ms = remaining_ms(deadline);
        if (ms == 0)
            return -ETIMEDOUT;
        struct pollfd pfd = { .fd = ifd, .events = POLLIN };
        int r = poll(&pfd, ifd >= 0 ? 1 : 0, ms < 0 ? 50 : MIN(ms, 50));
        if (r < 0 && errno != EINTR)
            return negative_errno();
        if (r > 0) {
            char buf[4096];
            while (read(ifd, buf, sizeof buf) > 0)
                ;
        }
    }
}

int udev_wait_for_device(dev_t devno, const char *devnode, usec_t timeout) {
    if (major(devno) == 0)
        return -EINVAL;
    usec_t deadline = timeout == USEC_INFINITY ? USEC_INFINITY : now_usec(CLOCK_MONOTONIC) + timeout;
    if (udev_is_running())
        return wait_udev(devno, devnode, deadline);
    return wait_kernel(devno, devnode, deadline);
}
