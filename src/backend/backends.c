/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The backend table: one entry per Backend, nothing registered at run time. */
#include "backend-dir.h"
#include "backend-loop.h"
#include "backend-vdo.h"
#include "backend.h"


const VolumeBackend *const volume_backends[_BACKEND_MAX] = {
    [BACKEND_LOOP_EXT4] = &loop_ext4_backend,
    [BACKEND_LOOP_XFS] = &loop_xfs_backend,
    [BACKEND_VDO_XFS] = &vdo_xfs_backend,
    [BACKEND_DIR] = &dir_backend,
};

const VolumeBackend *volume_backend_get(Backend b) {
    if ((int) b < 0 || b >= _BACKEND_MAX)
        return NULL;
    return volume_backends[b];
}
