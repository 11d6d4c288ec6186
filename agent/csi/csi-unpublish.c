/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * NodeUnpublishVolume: the bind at target_path is unmounted and the
 * directory removed, then the workspace is removed through the API with
 * its data (an ephemeral volume ends with its pod). Idempotent, and a
 * volume that is not known is success, as the spec says. The workspace
 * stays while another target_path still has it (a multi-writer volume),
 * and a workspace without this volume's mark is never removed.
 *
 * Unmount first, remove second: when the agent is down the call fails
 * UNAVAILABLE with the target already gone, and the CO's retry finds
 * nothing to unmount and removes the workspace.
 */

#include <stdio.h>

#include "csi-mount.h"
#include "csi-plugin.h"
#include "csi-volume.h"
#include "csi.pb-c.h"
#include "util.h"

static int unmount_target(CsiCall *c, CsiPlugin *p, const char *target) {
    int k = csi_mount_check_target(target, p->target_roots);
    if (k == -ENOENT)
        return 0; /* no parent: nothing was ever published there */
    if (k < 0) {
        csi_call_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "target_path %s is %s", target,
                      k == -EPERM ? "outside the directories layoutd-csi mounts in (--target-root)"
                                  : "not an absolute path in canonical form");
        return k;
    }
    k = csi_mount_unmount(target);
    if (k == -EBUSY) {
        csi_call_fail(c, GRPC_STATUS_FAILED_PRECONDITION,
                      "target_path %s is busy (a process still uses it); try again when it is gone", target);
        return k;
    }
    if (k < 0) {
        csi_call_fail(c, GRPC_STATUS_INTERNAL, "unmounting %s: %s", target, strerror(-k));
        return k;
    }
    /* rmdir, never a recursive delete: what is left is not ours. Files
     * below the target, or a target that is no directory, were never the
     * volume's (publish refuses such a target, and nothing is written
     * under a bind): they are left alone, and the workspace is removed
     * all the same. Failing here would fail every retry, and keep the
     * workspace and its slot for ever. */
    if (rmdir(target) < 0 && errno != ENOENT) {
        k = negative_errno();
        if (k == -ENOTEMPTY || k == -ENOTDIR) {
            log_warning("target_path %s is not an empty directory after unmounting it (%s): what is there is not "
                        "the volume's, left alone",
                        target, strerror(-k));
            return 0;
        }
        csi_call_fail(c, GRPC_STATUS_INTERNAL, "removing %s after unmounting it: %s", target, strerror(-k));
        return k;
    }
    return 0;
}

void csi_node_unpublish_volume(CsiCall *c, const ProtobufCMessage *req, void *userdata) {
    CsiPlugin *p = userdata;
    const Csi__V1__NodeUnpublishVolumeRequest *r = (const Csi__V1__NodeUnpublishVolumeRequest *) req;
    char id[CSI_WORKSPACE_ID_SIZE];
    if (isempty(r->volume_id) || csi_volume_workspace_id(r->volume_id, id) < 0) {
        csi_call_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "volume_id is required (1 to 255 characters)");
        return;
    }
    if (isempty(r->target_path)) {
        csi_call_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "target_path is required");
        return;
    }
    _cleanup_json_ json_object *ws = NULL;
    if (csi_inflight_take(p->inflight, r->volume_id) < 0) {
        csi_call_fail(c, GRPC_STATUS_ABORTED, "an operation on volume %s is in progress", r->volume_id);
        return;
    }
    if (unmount_target(c, p, r->target_path) < 0)
        goto out;

    int k = csi_workspace_get(c, p, r->volume_id, id, &ws);
    if (k == -ENOENT) {
        /* Unknown (or not this volume's): nothing more to undo. */
        Csi__V1__NodeUnpublishVolumeResponse reply = CSI__V1__NODE_UNPUBLISH_VOLUME_RESPONSE__INIT;
        (void) csi_call_reply(c, &reply.base);
        log_info("volume %s unpublished from %s (no workspace %s of it)", r->volume_id, r->target_path, id);
        goto out;
    }
    if (k < 0)
        goto out;

    /* Still published elsewhere (SINGLE_NODE_MULTI_WRITER)? Then it stays. */
    const char *source = csi_json_str(ws, "mountpoint");
    CsiMount wm = {};
    if (source && csi_mount_at(source, &wm) >= 0) {
        _cleanup_(strv_freep) char **others = NULL;
        k = csi_mount_list(wm.devno, p->target_roots, r->target_path, &others);
        csi_mount_done(&wm);
        if (k >= 0 && others[0]) {
            Csi__V1__NodeUnpublishVolumeResponse reply = CSI__V1__NODE_UNPUBLISH_VOLUME_RESPONSE__INIT;
            (void) csi_call_reply(c, &reply.base);
            log_workspace(LOG_INFO, id, NULL, "volume %s unpublished from %s; still published at %s, kept",
                          r->volume_id, r->target_path, others[0]);
            goto out;
        }
    }

    if (csi_workspace_remove(c, p, id) >= 0) {
        Csi__V1__NodeUnpublishVolumeResponse reply = CSI__V1__NODE_UNPUBLISH_VOLUME_RESPONSE__INIT;
        (void) csi_call_reply(c, &reply.base);
        log_workspace(LOG_INFO, id, NULL, "volume %s unpublished from %s; workspace %s removed with its data",
                      r->volume_id, r->target_path, id);
    }
out:
    csi_inflight_release(p->inflight, r->volume_id);
}
