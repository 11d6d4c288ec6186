/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A subscription to the block subsystem's udev events (add, change,
 * remove of loop and dm devices), for the agent's cached observation: a
 * device that appears, changes or goes away is a reason to look again.
 * Only an fd and a drain: the caller polls the fd on its own loop. Without
 * udevd there are no events, and the fd simply never becomes readable.
 * Library code: 0 / -errno.
 */

#include "macro.h"

typedef struct BlockMonitor BlockMonitor;

/* Returns -errno, or 0 with *ret (its fd is non-blocking). */
int block_monitor_new(BlockMonitor **ret);
BlockMonitor *block_monitor_free(BlockMonitor *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(BlockMonitor *, block_monitor_free)
int block_monitor_fd(const BlockMonitor *m);
/* Reads every queued event; returns how many there were. */
unsigned block_monitor_drain(BlockMonitor *m);
