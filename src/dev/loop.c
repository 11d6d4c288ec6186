/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* STUB for the header commit only; real implementation follows. */
#include <errno.h>
#include "loop.h"
#include <stdlib.h>
void loop_info_done(LoopInfo *i) { free(i->node); free(i->backing_file); *i = (LoopInfo) {}; }
int loop_device_attach(const char *path, const LoopAttachOptions *opts, LoopInfo *ret, bool *ret_dio_fallback) { return -EOPNOTSUPP; }
int loop_device_find_by_backing_file(const char *path, LoopInfo *ret) { return -EOPNOTSUPP; }
int loop_device_get_info(const char *node, LoopInfo *ret) { return -EOPNOTSUPP; }
int loop_device_detach(const char *node) { return -EOPNOTSUPP; }
int loop_device_refresh_size(const char *node, uint64_t *ret_size) { return -EOPNOTSUPP; }
int loop_choose_block_size(const char *path, bool direct_io, unsigned *ret) { return -EOPNOTSUPP; }
int loop_device_list_below(const char *dir, char ***ret) { return -EOPNOTSUPP; }
