/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Waiting for a block device to be usable after we created it. With udevd
 * running, "usable" means udev has processed the add/change event (its
 * rules may create symlinks and probe); without udevd (containers, this
 * project's CI machine), the kernel's devtmpfs node is all there is, and we
 * check that it exists with the right rdev. Library code: 0 / -errno.
 */

#include <stdbool.h>
#include <sys/types.h>

#include "macro.h"

/*
 * Waits until the device node exists and, when udevd runs, until udev has
 * processed it (udev_device_get_is_initialized), using a udev monitor
 * filtered on subsystem "block" with poll() and the timeout; without udevd
 * it degrades to checking /sys/dev/block/M:m and the devnode's rdev (short
 * bounded retries up to the timeout). devnode may be NULL (then only sysfs
 * and /dev/block/M:m are checked).
 * Returns: -ETIMEDOUT, -errno, 0.
 */
int udev_wait_for_device(dev_t devno, const char *devnode, usec_t timeout);

/*
 * The one place that decides whether udevd runs: /run/udev/control exists
 * (the same test as libudev's and systemd's udev_available()).
 * LAYOUTD_UDEV=0/1 in the environment overrides it, for tests.
 */
bool udev_is_running(void);
