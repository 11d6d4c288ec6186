/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * NodeGetVolumeStats: bytes and inodes, and the volume's condition.
 *
 * The figures are the state volume's that holds the workspace, from the
 * agent's observation (GET /v1/volumes/{name}): what df shows inside the
 * workspace (its daemon answers statfs with the state volume's), shared
 * with the other workspaces of its flush scope. They are taken from the
 * API and not from a statfs of volume_path so that a hung daemon cannot
 * hang the CO's stats loop.
 *
 * abnormal is set, with a message saying what to do, when the daemon is
 * not running, when volume_path is not a mount of the daemon's current
 * FUSE connection (the daemon died and was restarted: the pod still sees
 * the dead mount until it is published again), when the state volume is
 * degraded, failed or out of service, or when a content pool volume is.
 */

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "csi-mount.h"
#include "csi-plugin.h"
#include "csi-volume.h"
#include "csi.pb-c.h"
#include "util.h"

typedef struct Condition {
    bool abnormal;
    char message[512];
} Condition;

static void note(Condition *cond, bool abnormal, const char *fmt, ...) _printf_(3, 4);
static void note(Condition *cond, bool abnormal, const char *fmt, ...) {
    /* The first abnormal finding is the message; warnings only while
     * nothing is abnormal. */
    if (cond->abnormal || (cond->message[0] && !abnormal))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cond->message, sizeof cond->message, fmt, ap);
    va_end(ap);
    cond->abnormal = abnormal;
}

static void check_daemon(Condition *cond, json_object *ws, const char *volume_path) {
    const char *id = csi_json_str(ws, "id") ?: "?";
    json_object *d = csi_json_obj(ws, "daemon");
    const char *state = csi_json_str(d, "state") ?: "unknown";
    if (!streq(state, "running")) {
        json_object *le = csi_json_obj(d, "last_exit");
        const char *sig = csi_json_str(le, "signal");
        int64_t status = 0;
        bool has_status = csi_json_int(le, "status", &status);
        char exit_text[64] = "";
        if (sig)
            snprintf(exit_text, sizeof exit_text, " (it was killed by SIG%s)", sig);
        else if (has_status)
            snprintf(exit_text, sizeof exit_text, " (it exited with status %" PRIi64 ")", status);
        note(cond, true, "the FUSE daemon of workspace %s is %s%s; files are not served", id, state, exit_text);
        return;
    }
    const char *source = csi_json_str(ws, "mountpoint");
    CsiMount now = {}, here = {};
    if (!source || csi_mount_at(source, &now) < 0) {
        note(cond, true, "workspace %s has no FUSE mount at %s", id, source ?: "?");
        return;
    }
    if (csi_mount_at(volume_path, &here) < 0)
        note(cond, true, "volume_path %s is not mounted", volume_path);
    else if (here.devno != now.devno)
        note(cond, true,
             "the mount at %s is from before workspace %s's daemon restarted and no longer serves files "
             "(ENOTCONN); restart the pod to publish it again", volume_path, id);
    csi_mount_done(&now);
    csi_mount_done(&here);
}

static void check_volume(Condition *cond, json_object *v, const char *what) {
    const char *name = csi_json_str(v, "name") ?: "?", *health = csi_json_str(v, "health") ?: "unknown";
    const char *state = csi_json_str(v, "state") ?: "unknown", *msg = csi_json_str(v, "message");
    if (!streq(state, "up"))
        note(cond, true, "%s %s is %s: %s", what, name, state, msg ?: "out of service");
    else if (STR_IN_SET(health, "degraded", "failed"))
        note(cond, true, "%s %s is %s: %s", what, name, health, msg ?: "see layoutctl show");
    else if (streq(health, "warning"))
        note(cond, false, "%s %s: %s", what, name, msg ?: "warning");
}

static int64_t figure(json_object *v, const char *key) {
    int64_t x = 0;
    return csi_json_int(v, key, &x) && x > 0 ? x : 0;
}

void csi_node_get_volume_stats(CsiCall *c, const ProtobufCMessage *req, void *userdata) {
    CsiPlugin *p = userdata;
    const Csi__V1__NodeGetVolumeStatsRequest *r = (const Csi__V1__NodeGetVolumeStatsRequest *) req;
    char id[CSI_WORKSPACE_ID_SIZE];
    if (isempty(r->volume_id) || csi_volume_workspace_id(r->volume_id, id) < 0) {
        csi_call_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "volume_id is required (1 to 255 characters)");
        return;
    }
    if (isempty(r->volume_path)) {
        csi_call_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "volume_path is required");
        return;
    }
    _cleanup_json_ json_object *ws = NULL;
    int k = csi_workspace_get(c, p, r->volume_id, id, &ws);
    if (k == -ENOENT)
        csi_call_fail(c, GRPC_STATUS_NOT_FOUND, "volume %s does not exist (no workspace %s)", r->volume_id, id);
    if (k < 0)
        return;
    CsiMount here = {};
    if (csi_mount_at(r->volume_path, &here) < 0) {
        csi_call_fail(c, GRPC_STATUS_NOT_FOUND, "volume %s is not published at %s", r->volume_id, r->volume_path);
        return;
    }
    csi_mount_done(&here);

    CsiApiReply vols = {};
    k = csi_api_call(p->api, "GET", "/v1/volumes", NULL, 10 * USEC_PER_SEC, &vols);
    if (k < 0 || vols.status != 200) {
        csi_fail_api(c, p, k, &vols, "reading the volumes");
        csi_api_reply_done(&vols);
        return;
    }
    const char *home = csi_json_str(ws, "volume");
    json_object *list = NULL, *mine = NULL;
    Condition cond = {};
    check_daemon(&cond, ws, r->volume_path);
    if (json_object_object_get_ex(vols.body, "volumes", &list) && json_object_is_type(list, json_type_array))
        for (size_t i = 0; i < json_object_array_length(list); i++) {
            json_object *v = json_object_array_get_idx(list, i);
            const char *name = csi_json_str(v, "name"), *role = csi_json_str(v, "role");
            if (home && name && streq(name, home)) {
                mine = v;
                check_volume(&cond, v, "its state volume");
            } else if (role && streq(role, "content"))
                check_volume(&cond, v, "content pool volume");
        }
    if (!mine)
        note(&cond, true, "the state volume %s of workspace %s is not known to layoutd", home ?: "?", id);
    if (!cond.message[0])
        snprintf(cond.message, sizeof cond.message, "ok: workspace %s serves on %s", id, home ?: "?");

    Csi__V1__VolumeUsage bytes = CSI__V1__VOLUME_USAGE__INIT, inodes = CSI__V1__VOLUME_USAGE__INIT;
    bytes.unit = CSI__V1__VOLUME_USAGE__UNIT__BYTES;
    bytes.total = figure(mine, "size_bytes");
    bytes.used = figure(mine, "used_bytes");
    bytes.available = figure(mine, "free_bytes");
    inodes.unit = CSI__V1__VOLUME_USAGE__UNIT__INODES;
    inodes.total = figure(mine, "inodes");
    inodes.available = figure(mine, "free_inodes");
    inodes.used = inodes.total > inodes.available ? inodes.total - inodes.available : 0;
    Csi__V1__VolumeUsage *usage[] = { &bytes, &inodes };
    Csi__V1__VolumeCondition vc = CSI__V1__VOLUME_CONDITION__INIT;
    vc.abnormal = cond.abnormal;
    vc.message = cond.message;
    Csi__V1__NodeGetVolumeStatsResponse reply = CSI__V1__NODE_GET_VOLUME_STATS_RESPONSE__INIT;
    reply.n_usage = ELEMENTSOF(usage);
    reply.usage = usage;
    reply.volume_condition = &vc;
    if (csi_call_reply(c, &reply.base) < 0)
        csi_call_fail(c, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    if (cond.abnormal)
        log_workspace(LOG_WARNING, id, NULL, "volume %s is abnormal: %s", r->volume_id, cond.message);
    csi_api_reply_done(&vols);
}
