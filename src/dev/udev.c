/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* STUB for the header commit only; real implementation follows. */
#include <errno.h>
#include "udev.h"
int udev_wait_for_device(dev_t devno, const char *devnode, usec_t timeout) { return -EOPNOTSUPP; }
bool udev_is_running(void) { return false; }
