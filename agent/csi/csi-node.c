/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Node service's NodeGetInfo and NodeGetCapabilities. */

#include "csi-plugin.h"
#include "csi.pb-c.h"
#include "util.h"

void csi_node_get_capabilities(CsiCall *c, const ProtobufCMessage *req, void *userdata) {
    /* No STAGE_UNSTAGE_VOLUME: there is nothing to stage, the workspace is
     * made at publish. No EXPAND_VOLUME: layoutd grows volumes itself. */
    static const Csi__V1__NodeServiceCapability__RPC__Type types[] = {
        CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__GET_VOLUME_STATS,
        CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__VOLUME_CONDITION,
    };
    Csi__V1__NodeServiceCapability__RPC rpc[ELEMENTSOF(types)];
    Csi__V1__NodeServiceCapability cap[ELEMENTSOF(types)];
    Csi__V1__NodeServiceCapability *caps[ELEMENTSOF(types)];
    for (size_t i = 0; i < ELEMENTSOF(types); i++) {
        rpc[i] = (Csi__V1__NodeServiceCapability__RPC) CSI__V1__NODE_SERVICE_CAPABILITY__RPC__INIT;
        rpc[i].type = types[i];
        cap[i] = (Csi__V1__NodeServiceCapability) CSI__V1__NODE_SERVICE_CAPABILITY__INIT;
        cap[i].type_case = CSI__V1__NODE_SERVICE_CAPABILITY__TYPE_RPC;
        cap[i].rpc = &rpc[i];
        caps[i] = &cap[i];
    }
    Csi__V1__NodeGetCapabilitiesResponse reply = CSI__V1__NODE_GET_CAPABILITIES_RESPONSE__INIT;
    reply.n_capabilities = ELEMENTSOF(caps);
    reply.capabilities = caps;
    if (csi_call_reply(c, &reply.base) < 0)
        csi_call_fail(c, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
}

/* The state pool's workspace slots: max_volumes x workspaces_per_volume,
 * every workspace this node can hold. The CO subtracts what is placed. */
static int state_slots(json_object *capacity, int64_t *ret) {
    json_object *pools;
    if (!json_object_object_get_ex(capacity, "pools", &pools) || !json_object_is_type(pools, json_type_array))
        return -EPROTO;
    for (size_t i = 0; i < json_object_array_length(pools); i++) {
        json_object *pool = json_object_array_get_idx(pools, i);
        const char *role = csi_json_str(pool, "role");
        if (role && streq(role, "state") && csi_json_int(pool, "workspace_slots", ret))
            return 0;
    }
    return -EPROTO;
}

void csi_node_get_info(CsiCall *c, const ProtobufCMessage *req, void *userdata) {
    CsiPlugin *p = userdata;
    CsiApiReply cap = {};
    int64_t slots = 0;
    int r = csi_api_call(p->api, "GET", "/v1/capacity", NULL, 10 * USEC_PER_SEC, &cap);
    if (r < 0 || cap.status != 200) {
        csi_fail_api(c, p, r, &cap, "reading the node's workspace slots");
        csi_api_reply_done(&cap);
        return;
    }
    if (state_slots(cap.body, &slots) < 0) {
        csi_call_fail(c, GRPC_STATUS_INTERNAL, "GET /v1/capacity has no state pool with workspace_slots");
        csi_api_reply_done(&cap);
        return;
    }
    csi_api_reply_done(&cap);

    Csi__V1__Topology__SegmentsEntry seg = CSI__V1__TOPOLOGY__SEGMENTS_ENTRY__INIT;
    seg.key = (char *) CSI_TOPOLOGY_KEY;
    seg.value = (char *) p->node_id;
    Csi__V1__Topology__SegmentsEntry *segs[] = { &seg };
    Csi__V1__Topology topo = CSI__V1__TOPOLOGY__INIT;
    topo.n_segments = 1;
    topo.segments = segs;
    Csi__V1__NodeGetInfoResponse reply = CSI__V1__NODE_GET_INFO_RESPONSE__INIT;
    reply.node_id = (char *) p->node_id;
    reply.max_volumes_per_node = MAX(slots, (int64_t) 0);
    reply.accessible_topology = &topo;
    if (csi_call_reply(c, &reply.base) < 0)
        csi_call_fail(c, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
}
