/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The backend table: one entry per Backend, nothing registered at run time. */
#include "backend-dir.h"
#include "backend-loop.h"
#include "backend-vdo.h"
#include "backend.h"
#include "util.h"

const VolumeBackend *const volume_backends[_BACKEND_MAX] = {
    [BACKEND_LOOP_EXT4] = &loop_backend,
    [BACKEND_LOOP_XFS] = &loop_backend,
    [BACKEND_LOOP_BTRFS] = &loop_backend,
    [BACKEND_VDO_XFS] = &vdo_xfs_backend,
    [BACKEND_DIR] = &dir_backend,
};

const VolumeBackend *volume_backend_get(Backend b) {
    if ((int) b < 0 || b >= _BACKEND_MAX)
        return NULL;
    return volume_backends[b];
}

void volume_maintenance_done(VolumeMaintenance *m) {
    if (!m)
        return;
    strv_free(m->argv);
    *m = (VolumeMaintenance) {};
}

int volume_maintenance(const Pool *p, const VolumeObservation *o, VolumeMaintenance *ret) {
    const VolumeBackend *b = p ? volume_backend_get(p->backend) : NULL;
    *ret = (VolumeMaintenance) {};
    if (!b)
        return -EINVAL;
    return b->maintenance ? b->maintenance(p, o, ret) : 0;
}
