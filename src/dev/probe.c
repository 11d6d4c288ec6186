/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* STUB for the header commit only; real implementation follows. */
#include <errno.h>
#include "probe.h"
#include <stdlib.h>
void probe_result_done(ProbeResult *p) { free(p->type); free(p->uuid); free(p->label); free(p->usage); *p = (ProbeResult) {}; }
int probe_path(const char *path, ProbeResult *ret) { return -EOPNOTSUPP; }
