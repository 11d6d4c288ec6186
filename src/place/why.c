/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The answer to "where would this workspace go, and why" (place-workspaces.h):
 * the decision place_workspace_create() would take now, the candidates it
 * was taken on, worded. One shape for the agent's
 * GET /v1/workspaces/{id}/placement and `layoutctl why` without an agent.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>

#include "place-internal.h"
#include "util.h"

int place_workspace_why(PlaceContext *c, const char *id, const char *tenant, json_object **ret) {
    if (!c || !id || !ret)
        return -EINVAL;
    PlaceCreateRequest req = { .id = id, .tenant = tenant, .reclaim = true };
    PlaceDecision d = {};
    PlaceCandidate *cands = NULL;
    size_t n = 0;
    PlacePoolConfig cfg;
    int r = place_workspace_explain(c, &req, &d, &cands, &n, &cfg);
    if (r < 0)
        return r;
    /* Kept data stays on its volume when it is taken again (sticky). */
    const WorkspaceRecord *kept = state_record_find_workspace(c->record, id);
    PlaceRequest preq = { .id = id, .tenant = tenant, .sticky_volume = kept && !kept->active ? kept->volume : NULL };
    _cleanup_free_ char *text = NULL;
    r = place_decision_format_why(&d, cands, n, &preq, &cfg, &text);
    json_object *o = r >= 0 ? json_object_new_object() : NULL;
    if (r >= 0 && !o)
        r = -ENOMEM;
    if (o) {
        json_object_object_add(o, "id", json_object_new_string(id));
        json_object_object_add(o, "action", json_object_new_string(place_action_to_string(d.action)));
        json_object_object_add(o, "reason", json_object_new_string(place_reason_to_string(d.reason)));
        if (d.action == PLACE_ACTION_USE)
            json_object_object_add(o, "volume", json_object_new_string(cands[d.candidate].name));
        else if (d.action == PLACE_ACTION_CARVE)
            json_object_object_add(o, "carve_index", json_object_new_int((int) d.carve_index));
        json_object_object_add(o, "explanation", json_object_new_string(d.explanation ?: ""));
        json_object_object_add(o, "why", json_object_new_string(text));
        *ret = o;
    }
    free(cands);
    place_decision_done(&d);
    return r < 0 ? r : 0;
}
