/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * "The mount table changed", on an sd-event loop, from libmount's monitor
 * (mnt_monitor, kernel side: /proc/self/mountinfo polls EPOLLPRI on every
 * change). A burst of changes between two loop iterations is one
 * callback; the callback reads the table itself. Library code: 0 / -errno.
 */

#include <systemd/sd-event.h>

#include "macro.h"

typedef struct MountMonitor MountMonitor;

typedef void (*MountMonitorCallback)(void *userdata);

/* Watches the kernel's mount table from loop e. Returns: -errno, 0 with *ret. */
int mount_monitor_new(sd_event *e, MountMonitorCallback cb, void *userdata, MountMonitor **ret);
/* Stops watching. NULL ok; returns NULL. */
MountMonitor *mount_monitor_free(MountMonitor *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(MountMonitor *, mount_monitor_free)
