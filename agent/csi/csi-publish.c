/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * NodePublishVolume for an ephemeral volume: the workspace is made (or
 * found) through the API, its daemon waited for, and its FUSE mount bound
 * onto target_path, read-only when asked.
 *
 * Idempotent: the same call again finds the workspace and the bind at
 * target_path and answers OK. A conflicting call (other attributes, or
 * the other readonly) is ALREADY_EXISTS; a second target_path of a
 * single-writer volume is FAILED_PRECONDITION, and so is a target that is
 * not an empty directory (refused before the workspace is made).
 */

#include <stdio.h>
#include <sys/mount.h>
#include <sys/sysmacros.h>

#include "csi-mount.h"
#include "csi-plugin.h"
#include "csi-volume.h"
#include "csi.pb-c.h"
#include "util.h"

typedef Csi__V1__VolumeCapability__AccessMode__Mode AccessMode;

/* The access modes a workspace can be published with: it lives on one
 * node. The multi-writer one lets one node's pods share it. */
static bool access_mode_ok(AccessMode m, bool *ret_single) {
    switch (m) {
    case CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_WRITER:
    case CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_SINGLE_WRITER:
    case CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_READER_ONLY:
        *ret_single = true;
        return true;
    case CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_MULTI_WRITER:
        *ret_single = false;
        return true;
    default:
        return false;
    }
}

/* A target that cannot take the bind: the answer the man page gives. */
static void fail_target(CsiCall *c, const char *target, int k) {
    if (k == -ENOTEMPTY)
        csi_call_fail(c, GRPC_STATUS_FAILED_PRECONDITION,
                      "target_path %s is not empty: its files are not the volume's, and a mount would hide them",
                      target);
    else if (k == -ENOTDIR)
        csi_call_fail(c, GRPC_STATUS_FAILED_PRECONDITION,
                      "target_path %s is not a directory (or is a symlink): a workspace is mounted on a directory",
                      target);
    else
        csi_call_fail(c, GRPC_STATUS_INTERNAL, "looking at target_path %s: %s", target, strerror(-k));
}

/* The checks that need nothing but the request. Returns: <0 with c failed. */
static int check_request(CsiCall *c, CsiPlugin *p, const Csi__V1__NodePublishVolumeRequest *r,
                         unsigned long *ret_flags, bool *ret_single) {
    if (isempty(r->volume_id)) {
        csi_call_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "volume_id is required");
        return -EINVAL;
    }
    if (isempty(r->target_path)) {
        csi_call_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "target_path is required");
        return -EINVAL;
    }
    int k = csi_mount_check_target(r->target_path, p->target_roots);
    if (k == -EPERM) {
        csi_call_fail(c, GRPC_STATUS_INVALID_ARGUMENT,
                      "target_path %s is outside the directories layoutd-csi mounts in (--target-root)", r->target_path);
        return k;
    }
    if (k == -ENOENT) {
        csi_call_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "the parent directory of target_path %s does not exist",
                      r->target_path);
        return k;
    }
    if (k < 0) {
        csi_call_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "target_path %s is not an absolute path in canonical form",
                      r->target_path);
        return k;
    }
    const Csi__V1__VolumeCapability *cap = r->volume_capability;
    if (!cap) {
        csi_call_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "volume_capability is required");
        return -EINVAL;
    }
    if (cap->access_type_case != CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_MOUNT) {
        csi_call_fail(c, GRPC_STATUS_INVALID_ARGUMENT,
                      "a layoutd workspace is a directory tree: only the mount access type is supported, not block");
        return -EINVAL;
    }
    const Csi__V1__VolumeCapability__MountVolume *mv = cap->mount;
    if (!isempty(mv->fs_type)) {
        csi_call_fail(c, GRPC_STATUS_INVALID_ARGUMENT,
                      "fs_type '%s' cannot be chosen: a workspace is the FUSE mount its daemon serves (leave it empty)",
                      mv->fs_type);
        return -EINVAL;
    }
    if (!isempty(mv->volume_mount_group)) {
        csi_call_fail(c, GRPC_STATUS_INVALID_ARGUMENT,
                      "volume_mount_group is not supported (no VOLUME_MOUNT_GROUP capability)");
        return -EINVAL;
    }
    if (!cap->access_mode || !access_mode_ok(cap->access_mode->mode, ret_single)) {
        csi_call_fail(c, GRPC_STATUS_INVALID_ARGUMENT,
                      "access mode %d is not supported: a workspace lives on one node (SINGLE_NODE_*)",
                      cap->access_mode ? (int) cap->access_mode->mode : 0);
        return -EINVAL;
    }
    _cleanup_free_ char *bad = NULL;
    if (csi_volume_mount_flags(mv->mount_flags, mv->n_mount_flags, r->readonly, ret_flags, &bad) < 0) {
        csi_call_fail(c, GRPC_STATUS_INVALID_ARGUMENT,
                      "mount flag '%s' is not supported (supported: ro, nosuid, nodev, noexec, noatime)", bad ?: "?");
        return -EINVAL;
    }
    /* A target that is no mount point yet must be an empty directory (or
     * missing): checked before the workspace is made, so that a refusal
     * leaves nothing behind. (A mount there is the idempotent case, or a
     * conflict: publish_mount() tells which.) */
    CsiMount tm = {};
    k = csi_mount_at(r->target_path, &tm);
    csi_mount_done(&tm);
    if (k == -ENOENT)
        k = csi_mount_check_empty(r->target_path);
    if (k < 0) {
        fail_target(c, r->target_path, k);
        return k;
    }
    return 0;
}

/* Binds the workspace onto the target, or finds it bound already. */
static int publish_mount(CsiCall *c, CsiPlugin *p, const Csi__V1__NodePublishVolumeRequest *r, json_object *ws,
                         unsigned long flags, bool single) {
    const char *id = csi_json_str(ws, "id"), *source = csi_json_str(ws, "mountpoint");
    CsiMount wm = {}, tm = {};
    if (!source || csi_mount_at(source, &wm) < 0) {
        csi_call_fail(c, GRPC_STATUS_UNAVAILABLE, "workspace %s is running but nothing is mounted at %s yet", id,
                      source ?: "(no mountpoint)");
        return -ENOENT;
    }
    dev_t devno = wm.devno;
    csi_mount_done(&wm);

    int k = csi_mount_at(r->target_path, &tm);
    if (k >= 0) {
        dev_t there = tm.devno;
        bool same = there == devno, ro = tm.read_only;
        csi_mount_done(&tm);
        if (same && ro == !!(flags & MS_RDONLY))
            return 0; /* published already, the same way */
        if (same)
            csi_call_fail(c, GRPC_STATUS_ALREADY_EXISTS, "volume %s is published at %s %s, not %s", r->volume_id,
                          r->target_path, ro ? "read-only" : "read-write", ro ? "read-write" : "read-only");
        else
            csi_call_fail(c, GRPC_STATUS_ALREADY_EXISTS,
                          "target_path %s holds another mount (%u:%u, not workspace %s's %u:%u; a stale bind from "
                          "before its daemon restarted?): unpublish it first",
                          r->target_path, major(there), minor(there), id, major(devno), minor(devno));
        return -EEXIST;
    }
    if (k != -ENOENT) {
        csi_call_fail(c, GRPC_STATUS_INTERNAL, "reading the mount table: %s", strerror(-k));
        return k;
    }
    if (single) {
        _cleanup_(strv_freep) char **others = NULL;
        k = csi_mount_list(devno, p->target_roots, r->target_path, &others);
        if (k < 0) {
            csi_call_fail(c, GRPC_STATUS_INTERNAL, "reading the mount table: %s", strerror(-k));
            return k;
        }
        if (others[0]) {
            csi_call_fail(c, GRPC_STATUS_FAILED_PRECONDITION,
                          "volume %s is published at %s already; a single-node-writer volume is published once",
                          r->volume_id, others[0]);
            return -EBUSY;
        }
    }
    k = csi_mount_bind(source, devno, r->target_path, flags);
    if (k == -ENOTEMPTY || k == -ENOTDIR) {
        fail_target(c, r->target_path, k);
        return k;
    }
    if (k < 0) {
        csi_call_fail(c, k == -EBUSY ? GRPC_STATUS_ALREADY_EXISTS : GRPC_STATUS_INTERNAL,
                      "binding %s onto %s: %s", source, r->target_path, strerror(-k));
        return k;
    }
    return 0;
}

void csi_node_publish_volume(CsiCall *c, const ProtobufCMessage *req, void *userdata) {
    CsiPlugin *p = userdata;
    const Csi__V1__NodePublishVolumeRequest *r = (const Csi__V1__NodePublishVolumeRequest *) req;
    unsigned long flags = 0;
    bool single = true;
    if (check_request(c, p, r, &flags, &single) < 0)
        return;

    _cleanup_free_ CsiAttribute *attrs = calloc(r->n_volume_context ?: 1, sizeof(CsiAttribute));
    if (!attrs) {
        csi_call_fail(c, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    for (size_t i = 0; i < r->n_volume_context; i++)
        attrs[i] = (CsiAttribute) { r->volume_context[i]->key, r->volume_context[i]->value };
    _cleanup_json_ json_object *body = NULL;
    _cleanup_free_ char *error = NULL;
    int k = csi_volume_create_body(r->volume_id, attrs, r->n_volume_context, &body, &error);
    if (k < 0) {
        csi_call_fail(c, k == -EINVAL ? GRPC_STATUS_INVALID_ARGUMENT : GRPC_STATUS_RESOURCE_EXHAUSTED, "%s",
                      error ?: "out of memory");
        return;
    }
    const char *id = csi_json_str(body, "id");

    if (csi_inflight_take(p->inflight, r->volume_id) < 0) {
        csi_call_fail(c, GRPC_STATUS_ABORTED, "an operation on volume %s is in progress", r->volume_id);
        return;
    }
    _cleanup_json_ json_object *ws = NULL;
    if (csi_workspace_ensure(c, p, r->volume_id, body, &ws) >= 0 && publish_mount(c, p, r, ws, flags, single) >= 0) {
        Csi__V1__NodePublishVolumeResponse reply = CSI__V1__NODE_PUBLISH_VOLUME_RESPONSE__INIT;
        if (csi_call_reply(c, &reply.base) < 0)
            csi_call_fail(c, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        else
            log_workspace(LOG_INFO, id, NULL, "volume %s published at %s%s (workspace %s on %s)", r->volume_id,
                          r->target_path, flags & MS_RDONLY ? " read-only" : "", id,
                          csi_json_str(ws, "volume") ?: "?");
    }
    csi_inflight_release(p->inflight, r->volume_id);
}
