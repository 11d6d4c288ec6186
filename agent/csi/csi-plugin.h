/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * layoutd-csi: the CSI v1 node plugin of layoutd (docs/fleet.md, man
 * layoutd-csi). The pieces:
 *   layoutd-csi.c     options, signals, the server's method table
 *   csi-server.c      the gRPC server loop (gRPC C core + protobuf-c)
 *   csi-identity.c    GetPluginInfo, GetPluginCapabilities, Probe
 *   csi-node.c        NodeGetInfo, NodeGetCapabilities
 *   csi-publish.c     NodePublishVolume
 *   csi-unpublish.c   NodeUnpublishVolume
 *   csi-stats.c       NodeGetVolumeStats
 *   csi-workspace.c   a volume's workspace through the API: ensure it
 *                     exists and serves, remove it
 *   csi-api.c         the layoutd API client (libcurl on the Unix socket)
 *   csi-error.c       API answers and errnos -> gRPC status codes (tables)
 *   csi-fail.c        a call failed with them for an API request
 *   csi-inflight.c    one operation per volume at a time
 *   csi-mount.c       bind mounts and mountinfo
 *   csi-volume.c      volume id -> workspace id, attributes -> request (pure)
 */

#include <grpc/status.h>
#include <pthread.h>

#include "csi-api.h"
#include "csi-server.h"

#define CSI_DRIVER_NAME "layoutd.io"
#define CSI_TOPOLOGY_KEY "topology.layoutd.io/node"
/* How long a publish waits for a workspace when the CO set no deadline. */
#define CSI_DEFAULT_WAIT (120 * USEC_PER_SEC)

typedef struct CsiInflight CsiInflight;

typedef struct CsiPlugin {
    const char *node_id;
    char **target_roots;      /* where target paths may be */
    CsiApi *api;
    CsiInflight *inflight;
} CsiPlugin;

/* ---- the handlers (CsiHandler, userdata = CsiPlugin) ---- */
void csi_identity_get_plugin_info(CsiCall *c, const ProtobufCMessage *req, void *userdata);
void csi_identity_get_plugin_capabilities(CsiCall *c, const ProtobufCMessage *req, void *userdata);
void csi_identity_probe(CsiCall *c, const ProtobufCMessage *req, void *userdata);
void csi_node_get_info(CsiCall *c, const ProtobufCMessage *req, void *userdata);
void csi_node_get_capabilities(CsiCall *c, const ProtobufCMessage *req, void *userdata);
void csi_node_publish_volume(CsiCall *c, const ProtobufCMessage *req, void *userdata);
void csi_node_unpublish_volume(CsiCall *c, const ProtobufCMessage *req, void *userdata);
void csi_node_get_volume_stats(CsiCall *c, const ProtobufCMessage *req, void *userdata);

/* ---- csi-error.c ---- */

/* "RESOURCE_EXHAUSTED", for logs. */
const char *csi_status_to_string(grpc_status_code code);

/* The gRPC code for an API answer (pure; the table is in csi-error.c). */
grpc_status_code csi_error_code_for_reply(long http_status, const char *api_code);
/* The gRPC code for a failed request (r < 0: the agent is down, ...). */
grpc_status_code csi_error_code_for_errno(int r);

/* ---- csi-fail.c ---- */

/* Fails c for a request that did not get the answer it needed: r < 0 a
 * transport error, else reply's error (what: "creating workspace X"). */
void csi_fail_api(CsiCall *c, const CsiPlugin *p, int r, const CsiApiReply *reply, const char *what);

/* ---- csi-inflight.c ---- */
int csi_inflight_new(CsiInflight **ret);
CsiInflight *csi_inflight_free(CsiInflight *f);
/* Marks volume_id busy. Returns: -EBUSY when another call holds it, 0. */
int csi_inflight_take(CsiInflight *f, const char *volume_id);
void csi_inflight_release(CsiInflight *f, const char *volume_id);

/* ---- csi-workspace.c ---- */

/* Time left until deadline (at least 1 s, capped at the API's 600 s). */
usec_t csi_time_left(usec_t deadline);

/*
 * Makes sure the workspace that body describes exists and its daemon is
 * running, waiting for it until the call's deadline; *ret is its JSON
 * (GET /v1/workspaces/{id}). A workspace of that id that is not this
 * volume's, or this volume's with other attributes, is ALREADY_EXISTS.
 * Returns: <0 with c failed (the gRPC status set), 0 with *ret.
 */
int csi_workspace_ensure(CsiCall *c, CsiPlugin *p, const char *volume_id, json_object *body, json_object **ret);

/* The workspace of id as the API has it. Returns: -ENOENT (none, or not
 * volume_id's), <0 with c failed, 0 with *ret. */
int csi_workspace_get(CsiCall *c, CsiPlugin *p, const char *volume_id, const char *id, json_object **ret);

/* Removes workspace id and destroys its data (an ephemeral volume's data
 * ends with it). Unknown is success. Returns: <0 with c failed, 0. */
int csi_workspace_remove(CsiCall *c, CsiPlugin *p, const char *id);

/* ---- the log (src/log/log.c) ---- */
#include "log.h"
