/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The dm-vdo target through libdevmapper: support check, create, remove,
 * status, the "stats" message, reload (grow). Every call converts libdm's
 * 1 = success / 0 = failure to 0 / -errno, and nothing here prints: a libdm
 * log function (installed on first use, process-wide) keeps the last error
 * message, which each call hands back in *ret_error (may be NULL) when it
 * fails.
 *
 * udev: when udevd runs (udev_is_running()), every node-changing call
 * carries a udev cookie and waits for udev (dm_udev_wait), so
 * /dev/mapper/<name> exists and udev's rules ran when we return. Without
 * udevd (containers, this project's CI) sync support is switched off,
 * libdm makes the nodes itself, and we check the node ourselves.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "vdo-status.h"
#include "vdo-table.h"

/* The message the whole backend uses when the kernel cannot do VDO. */
#define VDO_DM_UNSUPPORTED_MESSAGE "kernel has no dm-vdo target; load dm-vdo (modprobe dm-vdo)"

/*
 * Checks up front that the kernel has device-mapper and the vdo target:
 * /dev/mapper/control or "device-mapper" in /proc/misc, then the target
 * list (DM_LIST_VERSIONS); if "vdo" is missing, runs `modprobe dm-vdo` once
 * and looks again. Sets *ret_version (may be NULL) to the target version
 * {major, minor, patch}.
 * Returns: -EOPNOTSUPP (with *ret_error = VDO_DM_UNSUPPORTED_MESSAGE and
 * why), -errno, 0.
 */
int vdo_dm_check_support(unsigned ret_version[3], char **ret_error);

/* A device-mapper name layoutd may use: [A-Za-z0-9_.+-], 1..127 chars. */
bool vdo_dm_name_is_valid(const char *name);

/*
 * Creates /dev/mapper/<name> with one vdo target from t (the volume must
 * be formatted already: the kernel loads its super block, which takes a
 * few seconds). Sets *ret_node ("/dev/mapper/<name>") and *ret_devno (both
 * may be NULL).
 * Returns: -EEXIST (a device of that name exists), -EIO and friends from
 * the kernel (a size that does not match the super block gives -EIO, see
 * *ret_error), -errno, 0.
 */
int vdo_dm_create(const char *name, const VdoTable *t, char **ret_node, dev_t *ret_devno, char **ret_error);

/* Removes the device (retrying a transient EBUSY, as dmsetup --retry).
 * Returns: -ENXIO (no such device), -EBUSY (open: mounted?), -errno, 0. */
int vdo_dm_remove(const char *name, char **ret_error);

/* Whether a dm device of that name exists; *ret_devno (may be NULL).
 * Returns: -ENXIO (none), -errno, 0. */
int vdo_dm_get_devno(const char *name, dev_t *ret_devno);

/* The raw status text of the device's (only) target and its type.
 * Returns: -ENXIO, -EMEDIUMTYPE (not a single vdo target), -errno, 0. */
int vdo_dm_get_status(const char *name, VdoStatus *ret, char **ret_error);

/* Sends a target message (sector 0) and returns the reply text (may be
 * empty). Returns: -ENXIO, -errno, 0 with *ret_reply (may be NULL). */
int vdo_dm_message(const char *name, const char *message, char **ret_reply, char **ret_error);

/* Status line + "stats" message, combined and derived (saving percent,
 * degraded). A failing message leaves has_message false but still
 * succeeds when the status line was read. Returns: as vdo_dm_get_status. */
int vdo_dm_get_stats(const char *name, VdoStats *ret, char **ret_error);

/*
 * Loads a new table into the running device and resumes it: how dm-vdo
 * grows (a larger logical size, or a larger storage size after the loop
 * device grew; neither may shrink). If the resume fails, the device keeps
 * running with the old table.
 * Returns: -errno, 0.
 */
int vdo_dm_reload(const char *name, const VdoTable *t, char **ret_error);
