/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* STUB for the header commit only; real implementation follows. */
#include <errno.h>
#include <stdlib.h>
#include "mount.h"
void mount_info_done(MountInfo *m) { free(m->target); free(m->source); free(m->fstype); free(m->options); *m = (MountInfo) {}; }
int mount_find_by_target(const char *target, MountInfo *ret) { return -EOPNOTSUPP; }
int mount_find_by_devno(dev_t devno, MountInfo *ret) { return -EOPNOTSUPP; }
int mount_volume(const char *source, const char *target, const char *fstype, const char *options) { return -EOPNOTSUPP; }
int mount_unmount(const char *target, bool lazy, char ***ret_holders) { return -EOPNOTSUPP; }
int mount_list_holders(const char *target, char ***ret) { return -EOPNOTSUPP; }
