/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* STUB for the header commit only; real implementation follows. */
#include <errno.h>
#include "mkfs.h"
#include <stddef.h>
int mkfs_build_argv(const char *fstype, const char *device, const char *label, const char *uuid, char *const *extra_options, char ***ret_argv) { return -EOPNOTSUPP; }
int dev_run_program(char *const *argv, char **ret_output, int *ret_status) { return -EOPNOTSUPP; }
int mkfs_grow_argv(const char *fstype, const char *device, const char *mountpoint, char ***ret_argv) { return -EOPNOTSUPP; }
const char *mkfs_program(const char *fstype) { return NULL; }
