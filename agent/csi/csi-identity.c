/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Identity service: who the plugin is, what it offers, whether it can
 * serve now. */

#include "csi-plugin.h"
#include "csi.pb-c.h"
#include "util.h"

void csi_identity_get_plugin_info(CsiCall *c, const ProtobufCMessage *req, void *userdata) {
    Csi__V1__GetPluginInfoResponse reply = CSI__V1__GET_PLUGIN_INFO_RESPONSE__INIT;
    reply.name = (char *) CSI_DRIVER_NAME;
    reply.vendor_version = (char *) LAYOUTD_VERSION;
    if (csi_call_reply(c, &reply.base) < 0)
        csi_call_fail(c, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
}

void csi_identity_get_plugin_capabilities(CsiCall *c, const ProtobufCMessage *req, void *userdata) {
    /* No CONTROLLER_SERVICE: the plugin serves ephemeral inline volumes,
     * which need no controller (no CreateVolume, no attach); each node's
     * layoutd makes its own workspaces. VOLUME_ACCESSIBILITY_CONSTRAINTS,
     * because NodeGetInfo reports a topology (the spec asks for both or
     * neither): a workspace exists on its node only. */
    Csi__V1__PluginCapability__Service svc = CSI__V1__PLUGIN_CAPABILITY__SERVICE__INIT;
    svc.type = CSI__V1__PLUGIN_CAPABILITY__SERVICE__TYPE__VOLUME_ACCESSIBILITY_CONSTRAINTS;
    Csi__V1__PluginCapability cap = CSI__V1__PLUGIN_CAPABILITY__INIT;
    cap.type_case = CSI__V1__PLUGIN_CAPABILITY__TYPE_SERVICE;
    cap.service = &svc;
    Csi__V1__PluginCapability *caps[] = { &cap };
    Csi__V1__GetPluginCapabilitiesResponse reply = CSI__V1__GET_PLUGIN_CAPABILITIES_RESPONSE__INIT;
    reply.n_capabilities = ELEMENTSOF(caps);
    reply.capabilities = caps;
    if (csi_call_reply(c, &reply.base) < 0)
        csi_call_fail(c, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
}

void csi_identity_probe(CsiCall *c, const ProtobufCMessage *req, void *userdata) {
    CsiPlugin *p = userdata;
    /* Ready only when the agent answers and is ready: before that every
     * publish would fail. The plugin itself is healthy either way, so it
     * answers ready=false rather than an error (an error asks the CO to
     * restart the plugin, which cannot help). */
    CsiApiReply status = {};
    int r = csi_api_call(p->api, "GET", "/v1/status", NULL, 3 * USEC_PER_SEC, &status);
    const char *state = r >= 0 && status.status == 200 ? csi_json_str(status.body, "state") : NULL;
    bool ready = state && streq(state, "ready");
    if (!ready)
        log_debug("Probe: not ready: %s", r < 0 ? "layoutd does not answer" : state ? state : "bad status answer");
    Google__Protobuf__BoolValue value = GOOGLE__PROTOBUF__BOOL_VALUE__INIT;
    value.value = ready;
    Csi__V1__ProbeResponse reply = CSI__V1__PROBE_RESPONSE__INIT;
    reply.ready = &value;
    if (csi_call_reply(c, &reply.base) < 0)
        csi_call_fail(c, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    csi_api_reply_done(&status);
}
