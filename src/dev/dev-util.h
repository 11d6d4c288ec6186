/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Small helpers shared by the device layer (src/dev/, src/mount/): sysfs
 * numbers, and the random backoff used on known kernel races. Library
 * code: 0 / -errno, never logs.
 */

#include <stdint.h>
#include <sys/types.h>

/*
 * Sleeps a random 10..250 ms (nanosleep, resumed after EINTR). This is not
 * "sleep to give it time": it is backoff on a known race (two callers got
 * the same free loop device; a udev probe holds a device for a moment), and
 * the random spread keeps racing callers from colliding again in lockstep.
 */
void dev_backoff_jitter(void);

/*
 * Parses a decimal unsigned number with optional surrounding whitespace
 * (sysfs style "4096\n"). Pure. Returns: -EINVAL, -ERANGE, 0 with *ret.
 */
int dev_parse_u64(const char *s, uint64_t *ret);

/* Reads a sysfs attribute holding one decimal number.
 * Returns: -errno (e.g. -ENOENT: no such attribute), -EINVAL, 0 with *ret. */
int dev_read_u64_file(const char *path, uint64_t *ret);

/* Finds an executable in $PATH (or the default PATH when unset); a name
 * with a slash is checked as it is. Relative PATH entries are skipped.
 * Returns: -ENOENT, -ENOMEM, -EINVAL, 0 with *ret an absolute path. */
int dev_find_program(const char *name, char **ret);

/* "/sys/dev/block/M:m/<attr>" (attr may be NULL or ""). Returns 0 or -ENOMEM. */
int dev_sysfs_path(dev_t devno, const char *attr, char **ret);
