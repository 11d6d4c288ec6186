#!/usr/bin/env bash
# layoutd-csi as kubelet uses it, for real: the agent on loop-ext4 volumes
# with real FUSE daemons, the plugin on its gRPC socket, and a real gRPC
# client (python3-grpcio, stubs compiled from agent/csi/csi.proto now)
# making every call kubelet makes: the identity calls, NodeGetInfo,
# NodeGetCapabilities, publish twice (idempotent) and the conflicting
# variants, a target that is not an empty directory (refused, nothing
# made), a read-only publish, the bind mount visible and writable at
# target_path, no slot left (RESOURCE_EXHAUSTED), stats and their
# condition before and after the daemon is killed, unpublish twice (the
# workspace and its data gone), an unknown volume, and the agent stopped
# (UNAVAILABLE) and started again.
TEST_NAME=csi-kubelet
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/agent/lib-agent.sh"
. "$LAYOUTD_TESTS/csi/lib-csi.sh"
require_root; require_loop; require_fuse; require_cmd curl; require_cmd mkfs.ext4; require_cmd findmnt
[ -x "$PY" ] || skip "needs /usr/bin/python3"
[ -x "$WSFS" ] || fail "reference daemon not built: $WSFS"
require_csi

# One state volume of two workspaces: two slots, so the third volume finds none.
L=$WORK/layout.yaml
write_layout "$L" 1 1 2
# With each workspace's cache (docs/layout.md, "The cache"): a pod must see
# it through its bind.
sed -i 's/^  package_store: true$/  package_store: true\n  cache: true/' "$L"
grep -q '^  cache: true$' "$L" || fail "test setup: cache not turned on"
# Mounts below $WORK shared, as systemd makes / on a real node (and kubelet
# its own directory): here PID 1 is not systemd and mounts are private,
# where no unmount would ever propagate and the check below could not fail.
mount --bind "$WORK" "$WORK" && mount --make-rshared "$WORK" || fail "test setup: cannot make $WORK shared"
start_agent "$L"
start_csi
on_cleanup 'stop_csi_quietly'
stop_csi_quietly() { [ -n "${CSI_PID:-}" ] && kill -TERM "$CSI_PID" 2>/dev/null; wait "${CSI_PID:-0}" 2>/dev/null || true; }

expect() { # expect CODE WHAT: the last call's code
    [ "$(csi_code)" = "$1" ] || fail "$2: expected $1, got $(csi_code): $(cat "$WORK/last")"
}
call() { csi "$@" | tee "$WORK/last"; }

# --- identity ------------------------------------------------------------
out=$(call Identity/GetPluginInfo); expect OK GetPluginInfo
assert_eq layoutd.io "$(jget "$out" "d['name']")" "driver name"
assert_eq "$("$LAYOUTD" --version | awk '{print $NF}')" "$(jget "$out" "d['vendor_version']")" "vendor_version"
out=$(call Identity/GetPluginCapabilities); expect OK GetPluginCapabilities
assert_eq "['VOLUME_ACCESSIBILITY_CONSTRAINTS']" "$(jget "$out" "[c['service']['type'] for c in d['capabilities']]")" \
    "plugin capabilities (no CONTROLLER_SERVICE)"
out=$(call Identity/Probe); expect OK Probe
assert_eq True "$(jget "$out" "d['ready']")" "Probe ready with the agent up"

# --- node info -----------------------------------------------------------
out=$(call Node/NodeGetCapabilities); expect OK NodeGetCapabilities
assert_eq "['GET_VOLUME_STATS', 'VOLUME_CONDITION']" "$(jget "$out" "sorted(c['rpc']['type'] for c in d['capabilities'])")" \
    "node capabilities"
out=$(call Node/NodeGetInfo); expect OK NodeGetInfo
assert_eq node-test "$(jget "$out" "d['node_id']")" "node_id"
slots=$(jget "$(api GET /v1/capacity)" "[p for p in d['pools'] if p['role']=='state'][0]['workspace_slots']")
assert_eq "$slots" "$(jget "$out" "d['max_volumes_per_node']")" "max_volumes_per_node = the state pool's slots"
assert_eq 2 "$slots" "slots of the test layout"
assert_eq node-test "$(jget "$out" "d['accessible_topology']['segments']['topology.layoutd.io/node']")" "topology"

# --- publish ---------------------------------------------------------------
UID_A=5e1b7c1e-0000-4000-8000-00000000000a
VA=$(kubelet_volume_id "$UID_A" ws); TA=$(kubelet_target "$UID_A" ws)
REQ_A=$(publish_request "$VA" "$TA" "$UID_A" false '"team": "red"')
call Node/NodePublishVolume "$REQ_A" >/dev/null; expect OK "publish volume A"
[ "$(findmnt -rn -o FSTYPE --mountpoint "$TA")" = fuse.layoutd-wsfs ] || fail "no FUSE bind at $TA: $(findmnt -rn --mountpoint "$TA")"
ws=$(api GET /v1/workspaces); assert_eq 1 "$(jget "$ws" "len(d['workspaces'])")" "one workspace after publish"
WA=$(jget "$ws" "d['workspaces'][0]['id']")
wa=$(api GET "/v1/workspaces/$WA")
assert_eq team-a "$(jget "$wa" "d['tenant']")" "tenant from the pod's namespace"
assert_eq "$VA" "$(jget "$wa" "d['labels']['csi.layoutd.io/volume-id']")" "the volume's mark"
assert_eq "agent-$UID_A|$UID_A|team-a|red" "$(jget "$wa" "'|'.join(d['labels'][k] for k in ('csi.storage.k8s.io/pod.name','csi.storage.k8s.io/pod.uid','csi.storage.k8s.io/pod.namespace','team'))")" "labels from the pod and the attributes"
assert_eq False "$(jget "$wa" "'csi.storage.k8s.io/ephemeral' in d['labels']")" "kubelet's other keys are not labels"
# Writable at target_path, and it is the workspace: the file is in its mount and its state directory.
echo "from the pod" >"$TA/hello.txt" || fail "target_path not writable"
assert_eq "from the pod" "$(cat "$(jget "$wa" "d['mountpoint']")/hello.txt")" "the bind shows the workspace"
assert_eq "from the pod" "$(cat "$(jget "$wa" "d['state_dir']")/hello.txt" 2>/dev/null || find "$(jget "$wa" "d['state_dir']")" -name hello.txt -exec cat {} +)" "the file reached the workspace's state directory"

# The pod sees the workspace's cache (a recursive bind), and an unmount on
# its side (a lazy one, as a runtime's teardown does) leaves the host's.
hc=$(jget "$wa" "d['cache']['path']")
[ "$(findmnt -rn -o TARGET --mountpoint "$TA/.layoutd-cache")" = "$TA/.layoutd-cache" ] || fail "the pod's bind lacks the cache mount"
echo "cached" >"$TA/.layoutd-cache/from-pod" || fail "the cache is not writable through the pod's bind"
assert_eq cached "$(cat "$hc/from-pod")" "the pod's cache is the workspace's"
umount -l "$TA/.layoutd-cache" || fail "cannot unmount the pod's copy of the cache"
findmnt -rn --mountpoint "$hc" >/dev/null || fail "an unmount in the pod's bind took the host's cache mount"
assert_eq cached "$(cat "$hc/from-pod")" "the host's cache after the pod's unmount"

# Again, the same: OK, and still one mount there.
call Node/NodePublishVolume "$REQ_A" >/dev/null; expect OK "publish volume A again"
assert_eq 1 "$(findmnt -rn -o TARGET --mountpoint "$TA" | wc -l)" "a second publish stacks nothing"
assert_eq 1 "$(jget "$(api GET /v1/workspaces)" "len(d['workspaces'])")" "a second publish makes no workspace"
# Conflicting second calls.
call Node/NodePublishVolume "$(publish_request "$VA" "$TA" "$UID_A" true '"team": "red"')" >/dev/null
expect ALREADY_EXISTS "the same target, read-only this time"
call Node/NodePublishVolume "$(publish_request "$VA" "$TA" "$UID_A" false '"team": "blue"')" >/dev/null
expect ALREADY_EXISTS "the same volume with another attribute"
call Node/NodePublishVolume "$(publish_request "$VA" "$(kubelet_target "$UID_A" other)" "$UID_A" false '"team": "red"')" >/dev/null
expect FAILED_PRECONDITION "a single-node-writer volume at a second target"
[ ! -e "$(kubelet_target "$UID_A" other)" ] || fail "a refused publish left its target behind"

# Bad requests.
call Node/NodePublishVolume "{\"target_path\": \"$TA\", \"volume_capability\": {\"mount\": {}, \"access_mode\": {\"mode\": \"SINGLE_NODE_WRITER\"}}}" >/dev/null
expect INVALID_ARGUMENT "no volume_id"
call Node/NodePublishVolume "{\"volume_id\": \"v\", \"target_path\": \"$KUBELET/pods/x/mount\", \"volume_capability\": {\"block\": {}, \"access_mode\": {\"mode\": \"SINGLE_NODE_WRITER\"}}}" >/dev/null
expect INVALID_ARGUMENT "block access"
call Node/NodePublishVolume "{\"volume_id\": \"v\", \"target_path\": \"$WORK/elsewhere\", \"volume_capability\": {\"mount\": {}, \"access_mode\": {\"mode\": \"SINGLE_NODE_WRITER\"}}}" >/dev/null
expect INVALID_ARGUMENT "a target outside --target-root"
call Node/NodePublishVolume "{\"volume_id\": \"v\", \"target_path\": \"$KUBELET/pods/x/mount\", \"volume_capability\": {\"mount\": {\"fs_type\": \"ext4\"}, \"access_mode\": {\"mode\": \"SINGLE_NODE_WRITER\"}}}" >/dev/null
expect INVALID_ARGUMENT "an fs_type"
call Node/NodePublishVolume "{\"volume_id\": \"v\", \"target_path\": \"$KUBELET/pods/x/mount\", \"volume_capability\": {\"mount\": {}, \"access_mode\": {\"mode\": \"MULTI_NODE_MULTI_WRITER\"}}}" >/dev/null
expect INVALID_ARGUMENT "a multi-node access mode"
assert_eq 1 "$(jget "$(api GET /v1/workspaces)" "len(d['workspaces'])")" "bad requests make no workspace"

# A target that is not an empty directory (man layoutd-csi: FAILED_PRECONDITION):
# refused before anything is made, so that nothing is hidden under a mount
# and the unpublish that follows has nothing it cannot undo.
UID_N=5e1b7c1e-0000-4000-8000-00000000000e
VN=$(kubelet_volume_id "$UID_N" ws); TN=$(kubelet_target "$UID_N" ws)
mkdir -p "$TN"; echo "not the volume's" >"$TN/left-over"
out=$(call Node/NodePublishVolume "$(publish_request "$VN" "$TN" "$UID_N")"); expect FAILED_PRECONDITION "a non-empty target"
jget "$out" "d['message']" | has "not empty" || fail "FAILED_PRECONDITION does not say why: $out"
if findmnt -rn --mountpoint "$TN" >/dev/null; then fail "a publish onto a non-empty target mounted it"; fi
assert_eq 1 "$(jget "$(api GET /v1/workspaces)" "len(d['workspaces'])")" "a non-empty target makes no workspace"
call Node/NodeUnpublishVolume "{\"volume_id\": \"$VN\", \"target_path\": \"$TN\"}" >/dev/null
expect OK "unpublish after a refused publish (the directory is not the volume's: left alone)"
assert_eq "not the volume's" "$(cat "$TN/left-over")" "the files in the refused target"
# A symlink as target: mount(2) would follow it out of --target-root.
mkdir -p "$WORK/outside"
TS=$(kubelet_target "$UID_N" link); mkdir -p "$(dirname "$TS")"; ln -s "$WORK/outside" "$TS"
call Node/NodePublishVolume "$(publish_request "$(kubelet_volume_id "$UID_N" link)" "$TS" "$UID_N")" >/dev/null
expect FAILED_PRECONDITION "a target that is a symlink"
if findmnt -rn --mountpoint "$WORK/outside" >/dev/null; then fail "a publish followed the target's symlink"; fi
assert_eq 1 "$(jget "$(api GET /v1/workspaces)" "len(d['workspaces'])")" "a symlink target makes no workspace"
rm -rf "$KUBELET/pods/$UID_N" "$WORK/outside"

# Read-only: a read-only bind of a second workspace.
UID_R=5e1b7c1e-0000-4000-8000-00000000000b
VR=$(kubelet_volume_id "$UID_R" ro); TR=$(kubelet_target "$UID_R" ro)
call Node/NodePublishVolume "$(publish_request "$VR" "$TR" "$UID_R" true)" >/dev/null; expect OK "publish read-only"
findmnt -rn -o OPTIONS --mountpoint "$TR" | tr , '\n' | grep -qx ro || fail "the read-only publish is not a ro mount: $(findmnt -rn --mountpoint "$TR")"
if ( echo x >"$TR/nope" ) 2>"$WORK/ro.err"; then fail "wrote through a read-only publish"; fi
grep -q "Read-only file system" "$WORK/ro.err" || fail "a write to the read-only publish failed otherwise: $(cat "$WORK/ro.err")"
ls "$TR" >/dev/null || fail "the read-only publish cannot be read"
# Read-only all through: the cache mount inside it too.
findmnt -rn --mountpoint "$TR/.layoutd-cache" >/dev/null || fail "the read-only publish lacks the cache mount"
if ( echo x >"$TR/.layoutd-cache/nope" ) 2>"$WORK/ro-cache.err"; then fail "wrote into the cache through a read-only publish"; fi
grep -q "Read-only file system" "$WORK/ro-cache.err" || fail "a write to the read-only publish's cache failed otherwise: $(cat "$WORK/ro-cache.err")"

# --- no slot left ------------------------------------------------------------
UID_C=5e1b7c1e-0000-4000-8000-00000000000c
VC=$(kubelet_volume_id "$UID_C" ws); TC=$(kubelet_target "$UID_C" ws)
out=$(call Node/NodePublishVolume "$(publish_request "$VC" "$TC" "$UID_C")"); expect RESOURCE_EXHAUSTED "publish with no slot left"
jget "$out" "d['message']" | has -e max_volumes -e workspaces_per_volume || fail "RESOURCE_EXHAUSTED without the reason: $out"
if findmnt -rn --mountpoint "$TC" >/dev/null; then fail "a refused publish mounted something at $TC"; fi
assert_eq 2 "$(jget "$(api GET /v1/workspaces)" "len(d['workspaces'])")" "the refused volume made no workspace"

# --- stats, and a daemon kill ------------------------------------------------
out=$(call Node/NodeGetVolumeStats "{\"volume_id\": \"$VA\", \"volume_path\": \"$TA\"}"); expect OK "stats of A"
vol=$(api GET "/v1/volumes/$(jget "$wa" "d['volume']")")
assert_eq "$(jget "$vol" "d['size_bytes']")" "$(jget "$out" "[u for u in d['usage'] if u['unit']=='BYTES'][0]['total']")" "bytes total = the state volume's size"
assert_eq "$(jget "$vol" "d['inodes']")" "$(jget "$out" "[u for u in d['usage'] if u['unit']=='INODES'][0]['total']")" "inodes total"
[ "$(jget "$out" "[u for u in d['usage'] if u['unit']=='INODES'][0]['used']")" -gt 0 ] || fail "no inodes used: $out"
[ "$(jget "$out" "[u for u in d['usage'] if u['unit']=='BYTES'][0]['available']")" -gt 0 ] || fail "no bytes available: $out"
assert_eq False "$(jget "$out" "d['volume_condition']['abnormal']")" "a healthy volume is normal ($out)"
call Node/NodeGetVolumeStats "{\"volume_id\": \"nope\", \"volume_path\": \"$TA\"}" >/dev/null; expect NOT_FOUND "stats of an unknown volume"
call Node/NodeGetVolumeStats "{\"volume_id\": \"$VA\", \"volume_path\": \"$KUBELET/pods\"}" >/dev/null; expect NOT_FOUND "stats at a path it is not published at"

pid=$(jget "$wa" "d['daemon']['pid']")
kill -KILL "$pid"
# Until layoutd restarts it the daemon is not running; after, the bind is
# the dead connection's. Either way: abnormal, with the reason.
out=$(call Node/NodeGetVolumeStats "{\"volume_id\": \"$VA\", \"volume_path\": \"$TA\"}"); expect OK "stats after the kill"
assert_eq True "$(jget "$out" "d['volume_condition']['abnormal']")" "abnormal after the daemon was killed ($out)"
restarted() { [ "$(jget "$(api GET "/v1/workspaces/$WA")" "str(d['daemon']['state']=='running' and d['daemon']['pid']!=$pid)")" = True ]; }
wait_for 30 restarted || fail "layoutd did not restart the killed daemon"
out=$(call Node/NodeGetVolumeStats "{\"volume_id\": \"$VA\", \"volume_path\": \"$TA\"}"); expect OK "stats after the restart"
assert_eq True "$(jget "$out" "d['volume_condition']['abnormal']")" "the old bind stays abnormal after the restart ($out)"
jget "$out" "d['volume_condition']['message']" | has -e "restart the pod" || fail "the condition does not say what to do: $out"
if cat "$TA/hello.txt" 2>"$WORK/stale.err"; then fail "the stale bind still serves"; fi
grep -q "Transport endpoint is not connected" "$WORK/stale.err" || fail "the stale bind fails otherwise: $(cat "$WORK/stale.err")"
log "stats follow the kill: $(jget "$out" "d['volume_condition']['message']")"

# --- unpublish ---------------------------------------------------------------
sd=$(jget "$wa" "d['state_dir']")
call Node/NodeUnpublishVolume "{\"volume_id\": \"$VA\", \"target_path\": \"$TA\"}" >/dev/null; expect OK "unpublish A"
findmnt -rn --mountpoint "$TA" >/dev/null && fail "$TA still mounted after unpublish"
[ ! -e "$TA" ] || fail "unpublish left $TA"
api GET "/v1/workspaces/$WA" >/dev/null; assert_eq 404 "$(st)" "A's workspace is gone from the API"
[ ! -e "$sd" ] || fail "A's data is still there: $sd"
call Node/NodeUnpublishVolume "{\"volume_id\": \"$VA\", \"target_path\": \"$TA\"}" >/dev/null; expect OK "unpublish A again"
call Node/NodeUnpublishVolume "{\"volume_id\": \"never-published\", \"target_path\": \"$(kubelet_target x y)\"}" >/dev/null
expect OK "unpublish of an unknown volume"
call Node/NodeUnpublishVolume "{\"target_path\": \"$TA\"}" >/dev/null; expect INVALID_ARGUMENT "unpublish without volume_id"
# A slot is free again: C fits now.
call Node/NodePublishVolume "$(publish_request "$VC" "$TC" "$UID_C")" >/dev/null; expect OK "publish C once A is gone"

# --- the agent stops, and comes back ----------------------------------------------
stop_agent
out=$(call Identity/Probe); expect OK "Probe with the agent down"
assert_eq False "$(jget "$out" "d['ready']")" "not ready with the agent down"
UID_D=5e1b7c1e-0000-4000-8000-00000000000d
VD=$(kubelet_volume_id "$UID_D" ws); TD=$(kubelet_target "$UID_D" ws)
call Node/NodeUnpublishVolume "{\"volume_id\": \"$VC\", \"target_path\": \"$TC\"}" >/dev/null; expect UNAVAILABLE "unpublish with the agent down"
out=$(call Node/NodePublishVolume "$(publish_request "$VD" "$TD" "$UID_D")"); expect UNAVAILABLE "publish with the agent down"
jget "$out" "d['message']" | has "layoutd is not running" || fail "UNAVAILABLE does not say why: $out"
call Node/NodeGetInfo >/dev/null; expect UNAVAILABLE "NodeGetInfo with the agent down"
start_agent "$L"
ready() { [ "$(jget "$(csi Identity/Probe)" "d['ready']")" = True ]; }
wait_for 30 ready || fail "Probe not ready after the agent came back"
# C's unpublish is retried, as kubelet does: its target is gone already, its workspace now.
call Node/NodeUnpublishVolume "{\"volume_id\": \"$VC\", \"target_path\": \"$TC\"}" >/dev/null; expect OK "unpublish C, retried"
call Node/NodePublishVolume "$(publish_request "$VD" "$TD" "$UID_D")" >/dev/null; expect OK "publish D after the agent restarted"
echo d >"$TD/d.txt" || fail "D not writable"
call Node/NodeUnpublishVolume "{\"volume_id\": \"$VD\", \"target_path\": \"$TD\"}" >/dev/null; expect OK "unpublish D"
call Node/NodeUnpublishVolume "{\"volume_id\": \"$VR\", \"target_path\": \"$TR\"}" >/dev/null; expect OK "unpublish R"
assert_eq 0 "$(jget "$(api GET /v1/workspaces)" "len(d['workspaces'])")" "every workspace gone after the unpublishes"
assert_eq 0 "$(findmnt -rn -o TARGET | grep -c "^$KUBELET/" || true)" "no mount left below the kubelet directory"

# Methods the plugin does not serve: UNIMPLEMENTED, not a hang.
call /csi.v1.Controller/CreateVolume >/dev/null; expect UNIMPLEMENTED "the Controller service"
call /csi.v1.Node/NodeStageVolume >/dev/null; expect UNIMPLEMENTED "NodeStageVolume"
call Node/NodeGetInfo >/dev/null; expect OK "NodeGetInfo once the agent is back"
stop_csi
grep -q "published at $TA" "$CSI_LOG" || fail "the plugin did not log the publish"
stop_agent
log "OK: every RPC, publish/unpublish twice, RESOURCE_EXHAUSTED, UNAVAILABLE and back, stats after a kill"
