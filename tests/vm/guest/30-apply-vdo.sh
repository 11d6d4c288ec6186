# layoutctl apply on a layout with a vdo-xfs content pool and a loop-xfs
# state pool, as an operator would run it (layoutctl from the .deb), then
# teardown of the loop volume, and the vdo volume taken down by src/vdo.
. "$LAYOUTD_VM_HOME/guest/lib.sh"
command -v layoutctl >/dev/null || skip "layoutctl not installed"
data_mount
root=/srv/data/apply-root
on_exit "layoutctl teardown --layout /tmp/l.yaml >/dev/null 2>&1; umount $root/volumes/content-0 2>/dev/null; vdo-smoke down content-0 $root/images/content-0.img"
cat >/tmp/l.yaml <<YAML
version: 1
root: $root
pools:
  state:
    backend: loop-xfs
    volume_size: 512MiB
    min_volumes: 1
    max_volumes: 2
    workspaces_per_volume: 4
  content:
    backend: vdo-xfs
    volume_size: 6GiB
    shards: 1
    mount_options: noatime
    vdo:
      logical_size: 16GiB
workspace:
  command: [/bin/true]
YAML
layoutctl apply --layout /tmp/l.yaml
findmnt -n -o SOURCE,FSTYPE "$root/volumes/content-0" | tee m.out
grep -q '/dev/mapper/layoutd-content-0 xfs' m.out || fail "content-0 is not XFS on the vdo device"
findmnt -n "$root/volumes/state-0" >/dev/null || fail "state-0 not mounted"
# idempotent: a second apply changes nothing
layoutctl apply --layout /tmp/l.yaml --json >again.json
grep -Eq '"ok": *true' again.json || fail "second apply not ok: $(cat again.json)"
! grep -Eq '"outcome": *"changed"' again.json || fail "second apply changed something: $(cat again.json)"
uuid=$(blkid -o value -s UUID /dev/mapper/layoutd-content-0)

# teardown through src/vdo's hook: unmount, dm remove, loop detach; the
# backing file stays (no --destroy-data).
layoutctl teardown --layout /tmp/l.yaml --json | tee td.json
grep -Eq '"ok": *true' td.json || fail "teardown not ok"
! findmnt -n "$root/volumes/content-0" >/dev/null || fail "content-0 still mounted after teardown"
[ ! -e /dev/mapper/layoutd-content-0 ] || fail "dm device left after teardown"
[ -z "$(losetup -j "$root/images/content-0.img")" ] || fail "loop device left after teardown"
[ -f "$root/images/content-0.img" ] || fail "backing file deleted without --destroy-data"
# teardown forgot the volume: apply refuses to adopt it as its own again
# ("files kept; apply will not adopt them again"), it must not format it.
layoutctl apply --layout /tmp/l.yaml --json >after.json || true
[ "$(blkid -p -o value -s TYPE "$root/images/content-0.img")" = vdo ] || fail "the kept VDO was overwritten"
! findmnt -n "$root/volumes/content-0" >/dev/null || {
    [ "$(blkid -o value -s UUID /dev/mapper/layoutd-content-0)" = "$uuid" ] || fail "content-0 was re-formatted"; }
layoutctl teardown --layout /tmp/l.yaml >/dev/null 2>&1 || true
log "RESULT vdo_teardown=ok backing_file_kept=1 reapply=$(jq -r '[.volumes[] | "\(.volume):\(.outcome)"] | join(",")' after.json)"
log "ok"
