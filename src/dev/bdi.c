/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* STUB for the header commit only; real implementation follows. */
#include <errno.h>
#include "bdi.h"
int bdi_read_limits(dev_t devno, BdiLimits *ret) { return -EOPNOTSUPP; }
int bdi_apply_limits(dev_t devno, const WritebackLimits *want) { return -EOPNOTSUPP; }
