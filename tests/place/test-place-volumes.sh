#!/usr/bin/env bash
# Placement on real loop-backed ext4 volumes: workspaces_per_volume 3, state
# volumes min 2 max 8. 21 workspaces give exactly 7 volumes of 3; 24 fill
# all 8; the 25th is refused with a clear error and nothing changes; a
# workspace removed with its data kept comes back to the same volume with
# its files (and is refused, not moved, while that volume is full).
. "$LAYOUTD_TESTS/lib/common.sh"
require_root
require_loop
require_cmd mkfs.ext4
require_cmd losetup

DRIVER=$LAYOUTD_BUILD_DIR/tests/place/place-driver
[ -x "$DRIVER" ] || fail "missing $DRIVER (build the place-driver target)"

ROOT=$WORK/root
LAYOUT=$WORK/layout.yaml
cat >"$LAYOUT" <<YAML
version: 1
root: $ROOT
pools:
  state:
    backend: loop-ext4
    volume_size: 64MiB
    min_volumes: 2
    max_volumes: 8
    workspaces_per_volume: 3
    workspace_reserve: 8MiB
    placement: spread
  content:
    backend: dir
    shards: 1
workspace:
  command: [/bin/true]
  user: root
  dir_mode: "0750"
api:
  socket: $WORK/api.sock
YAML
on_cleanup "'$DRIVER' '$LAYOUT' teardown >/dev/null 2>&1"

drv() { "$DRIVER" "$LAYOUT" "$@"; }
n_mounted() { findmnt -rn -o TARGET | grep -c "^$ROOT/volumes/state-" || true; }
# Only our own mounts: other tests mount and unmount on this machine too.
our_mounts() { findmnt -rn -o TARGET | grep "^$WORK/" | sort || true; }
n_loops() { losetup -n -O BACK-FILE | grep -c "^$ROOT/images/state-" || true; }

drv apply || fail "initial apply"
assert_eq 2 "$(n_mounted)" "state volumes after apply"

declare -A vol_of
for i in $(seq 1 21); do
    v=$(drv create "ws$i") || fail "create ws$i"
    vol_of[ws$i]=$v
done
scope=$(drv scope)
log "after 21 creates:"; printf '%s\n' "$scope" >&2
assert_eq 7 "$(printf '%s\n' "$scope" | wc -l)" "volumes after 21 creates"
while read -r vol n _; do
    assert_eq 3 "$n" "workspaces on $vol"
done <<<"$scope"
assert_eq 7 "$(n_mounted)" "mounted state volumes"
assert_eq 7 "$(n_loops)" "loop devices of state volumes"

# Every workspace directory is on its volume's filesystem, not on the host.
for i in $(seq 1 21); do
    v=${vol_of[ws$i]}
    d=$ROOT/volumes/$v/workspaces/ws$i
    [ -d "$d" ] || fail "missing $d"
    assert_eq "$(stat -c %d "$ROOT/volumes/$v")" "$(stat -c %d "$d")" "ws$i on $v's filesystem"
    assert_eq 750 "$(stat -c %a "$d")" "mode of $d"
done

for i in 22 23 24; do
    drv create "ws$i" >/dev/null || fail "create ws$i"
done
assert_eq 8 "$(n_mounted)" "mounted state volumes at max_volumes"

# The 25th: refused, explained, nothing changed.
before=$(sha256sum "$ROOT/layoutd-state.json")
mounts_before=$(our_mounts)
set +e
msg=$(drv create ws25 2>&1 >/dev/null)
rc=$?
set -e
assert_eq 2 "$rc" "exit status of the refused create"
log "refusal: $msg"
case "$msg" in
*"pool 'state' is full: 8 volumes × 3 workspaces (workspaces_per_volume) are in use; raise pools.state.max_volumes or workspaces_per_volume"*) ;;
*) fail "unclear refusal: $msg" ;;
esac
assert_eq "$before" "$(sha256sum "$ROOT/layoutd-state.json")" "record after the refusal"
assert_eq "$mounts_before" "$(our_mounts)" "mounts after the refusal"
assert_eq 8 "$(n_loops)" "loop devices after the refusal"
[ -z "$(find "$ROOT/volumes" -maxdepth 3 -name ws25)" ] || fail "ws25 left a directory"
drv why ws25 >&2

# Stickiness.
v5=${vol_of[ws5]}
echo "precious" >"$ROOT/volumes/$v5/workspaces/ws5/data"
drv remove ws5 || fail "remove ws5 (keep data)"
[ -f "$ROOT/volumes/$v5/workspaces/ws5/data" ] || fail "kept data gone"
set +e
msg=$(drv create ws5 2>&1)
rc=$?
set -e
assert_eq 1 "$rc" "re-create without reclaim"
case "$msg" in *reclaim*) ;; *) fail "no hint to reclaim: $msg" ;; esac
# The free slot goes to a new workspace (it is the only one left) ...
assert_eq "$v5" "$(drv create ws25)" "ws25 takes the freed slot"
# ... so ws5 cannot come back there now, and is not moved elsewhere.
set +e
msg=$(drv create ws5 --reclaim 2>&1)
rc=$?
set -e
assert_eq 2 "$rc" "reclaim onto a full volume"
case "$msg" in *"not moved"*) ;; *) fail "unclear sticky refusal: $msg" ;; esac
drv remove ws25 --destroy || fail "destroy ws25"
[ ! -e "$ROOT/volumes/$v5/workspaces/ws25" ] || fail "ws25 not destroyed"
assert_eq "$v5" "$(drv create ws5 --reclaim)" "ws5 back on its volume"
assert_eq precious "$(cat "$ROOT/volumes/$v5/workspaces/ws5/data")" "ws5's data"

# Destroy never deletes into another filesystem mounted inside a workspace.
d1=$ROOT/volumes/${vol_of[ws1]}/workspaces/ws1
mkdir -p "$d1/sub/mnt"
mount -t tmpfs tmpfs "$d1/sub/mnt"
echo "not yours" >"$d1/sub/mnt/keep"
set +e
msg=$(drv remove ws1 --destroy 2>&1)
rc=$?
set -e
assert_eq 1 "$rc" "destroy with a mount inside"
case "$msg" in *"mounted inside"*) ;; *) fail "unclear destroy refusal: $msg" ;; esac
assert_eq "not yours" "$(cat "$d1/sub/mnt/keep")" "file on the inner mount"
umount "$d1/sub/mnt"
drv remove ws1 --destroy || fail "destroy ws1 after unmounting"
[ ! -e "$d1" ] || fail "ws1 not destroyed"

# The record and the disks agree.
rec=$(drv reconcile)
[ -z "$rec" ] || fail "reconcile found drift: $rec"
while read -r vol n _; do
    [ "$n" -le 3 ] || fail "$vol holds $n workspaces"
done < <(drv scope)

drv teardown || fail "teardown"
assert_eq 0 "$(n_mounted)" "mounts after teardown"
log "ok"
