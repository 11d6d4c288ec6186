#!/bin/sh
# Advertises how many more layoutd workspaces this node takes as the
# extended resource layoutd.io/workspaces in the node's status, so that the
# scheduler places pods that request it only where a workspace fits.
# Runs in a DaemonSet pod: host's /run/layoutd mounted, NODE_NAME from the
# downward API, a service account allowed to patch nodes/status.
set -u
SOCK=${LAYOUTD_SOCKET:-/run/layoutd/api.sock}
INTERVAL=${INTERVAL:-15}
SA=/var/run/secrets/kubernetes.io/serviceaccount
APISERVER=https://${KUBERNETES_SERVICE_HOST}:${KUBERNETES_SERVICE_PORT}

layoutd() { curl -sSf --max-time 10 --unix-socket "$SOCK" "http://localhost$1"; }

while :; do
    # Capacity = workspaces already here + workspaces that still fit: the
    # scheduler subtracts the requests of the pods bound to the node itself.
    if status=$(layoutd /v1/status) && [ "$(printf '%s' "$status" | jq -r .state)" = ready ] &&
        cap=$(layoutd /v1/capacity); then
        value=$(printf '%s' "$cap" | jq '[.pools[] | select(.role == "state") | .workspaces + .workspace_slots_free] | add // 0')
    else
        value=0 # agent down or starting: no new workspaces; running pods are not evicted
    fi
    if [ "$value" != "${last:-}" ]; then
        curl -sSf --max-time 10 --cacert "$SA/ca.crt" \
            -H "Authorization: Bearer $(cat "$SA/token")" \
            -H 'Content-Type: application/json-patch+json' -X PATCH \
            --data "[{\"op\": \"add\", \"path\": \"/status/capacity/layoutd.io~1workspaces\", \"value\": \"$value\"}]" \
            "$APISERVER/api/v1/nodes/$NODE_NAME/status" >/dev/null && last=$value &&
            echo "layoutd.io/workspaces=$value on $NODE_NAME"
    fi
    sleep "$INTERVAL"
done
