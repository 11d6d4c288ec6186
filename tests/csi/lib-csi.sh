# Helpers for the layoutd-csi tests (source after common.sh and
# lib-agent.sh): the plugin, started for real on its own socket, and a
# real gRPC client compiled from agent/csi/csi.proto.
#   LAYOUTD_CSI=PATH   the plugin binary (tests/run passes the ASan one)
CSI=${LAYOUTD_CSI:-$LAYOUTD_BUILD_DIR/agent/csi/layoutd-csi}
CSI_SOCK=$WORK/plugins/layoutd.io/csi.sock
CSI_LOG=$WORK/csi.log
KUBELET=$WORK/kubelet            # plays /var/lib/kubelet
export CSI_PY=$WORK/py

require_csi() {
    [ -x "$CSI" ] || fail "layoutd-csi not built: $CSI"
    "$PY" -c 'import grpc, grpc_tools.protoc' 2>/dev/null ||
        skip "needs python3-grpcio and python3-grpc-tools (.ci/debian-packages)"
    # Stubs from the plugin's own .proto: the client knows only the wire.
    mkdir -p "$CSI_PY"
    local protos
    protos=$("$PY" -c 'import grpc_tools, os; print(os.path.join(os.path.dirname(grpc_tools.__file__), "_proto"))')
    "$PY" -m grpc_tools.protoc -I"$LAYOUTD_SOURCE_DIR/agent/csi" -I"$protos" --python_out="$CSI_PY" \
        --grpc_python_out="$CSI_PY" "$LAYOUTD_SOURCE_DIR/agent/csi/csi.proto" || fail "grpc_tools could not compile csi.proto"
}

# start_csi [ARGS...]: the plugin as the DaemonSet runs it; sets CSI_PID.
start_csi() {
    mkdir -p "$KUBELET/pods"
    "$CSI" --endpoint "unix://$CSI_SOCK" --node-id node-test --layoutd-socket "$SOCK" \
        --target-root "$KUBELET" "$@" >>"$CSI_LOG" 2>&1 &
    CSI_PID=$!
    track_pid "$CSI_PID"
    wait_for 20 test -S "$CSI_SOCK" || { cat "$CSI_LOG"; fail "layoutd-csi did not listen on $CSI_SOCK"; }
}

# stop_csi: SIGTERM; the plugin must exit 0 (under ASan: without a finding).
stop_csi() {
    [ -n "${CSI_PID:-}" ] || return 0
    kill -TERM "$CSI_PID"
    local rc=0
    wait "$CSI_PID" || rc=$?
    CSI_PID=
    [ "$rc" = 0 ] || { tail -40 "$CSI_LOG"; fail "layoutd-csi exited $rc after SIGTERM"; }
    ! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$CSI_LOG" || { cat "$CSI_LOG"; fail "sanitizer findings in layoutd-csi's log"; }
    [ ! -e "$CSI_SOCK" ] || fail "layoutd-csi left its socket behind"
}

# csi METHOD [JSON]: one call; prints the answer's JSON (a reply, or
# {"code", "message"}); `csi_code` of the last call is OK or the code.
csi() {
    local out rc=0
    out=$("$PY" "$LAYOUTD_TESTS/csi/csi-call.py" "$CSI_SOCK" "$@") || rc=$?
    if [ $rc = 0 ]; then echo OK >"$WORK/csi_code"; else jget "$out" "d['code']" >"$WORK/csi_code"; fi
    printf '%s' "$out"
}
csi_code() { cat "$WORK/csi_code"; }

# A kubelet-shaped ephemeral volume: its id ("csi-" + sha256 of pod uid
# and volume name, as kubelet makes it), its target path, and the
# NodePublishVolume request kubelet sends (podInfoOnMount).
kubelet_volume_id() { printf 'csi-%s' "$(printf '%s%s' "$1" "$2" | sha256sum | cut -c1-64)"; }
kubelet_target() { printf '%s/pods/%s/volumes/kubernetes.io~csi/%s/mount' "$KUBELET" "$1" "$2"; }
# publish_request VOLUME_ID TARGET POD_UID [READONLY] [EXTRA-ATTRS-JSON]
publish_request() {
    local ro=${4:-false} extra=${5:-}
    mkdir -p "$(dirname "$2")"
    printf '{"volume_id": "%s", "target_path": "%s", "readonly": %s,
      "volume_capability": {"mount": {}, "access_mode": {"mode": "SINGLE_NODE_WRITER"}},
      "volume_context": {"csi.storage.k8s.io/pod.name": "agent-%s", "csi.storage.k8s.io/pod.namespace": "team-a",
                         "csi.storage.k8s.io/pod.uid": "%s", "csi.storage.k8s.io/ephemeral": "true",
                         "csi.storage.k8s.io/serviceAccount.name": "default"%s}}' \
        "$1" "$2" "$ro" "$3" "$3" "${extra:+, $extra}"
}
