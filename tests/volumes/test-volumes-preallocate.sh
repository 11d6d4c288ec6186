#!/usr/bin/env bash
# preallocate: true (docs/layout.md) on real loop devices: the backing file
# of a preallocated pool has no holes after the carve, nor after an online
# grow (XFS; ext4 cannot grow here without CAP_SYS_RESOURCE); a sparse pool
# next to it stays sparse (the control: the check can fail); a sparse
# volume whose pool turns preallocate on gets its old holes filled at its
# next grow; the data survives. Discards are off on a preallocated
# volume's loop device (queue/discard_max_bytes 0, read back), so an
# fstrim of it fails and punches nothing out of the backing file, at
# carve and after a grow; on the sparse one an fstrim does give freed
# space back (the control).
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/volumes/lib.sh"
require_cmd mkfs.xfs
require_cmd xfs_growfs
require_cmd fstrim

# write_prealloc_layout STATE_SIZE CONTENT_SIZE CONTENT_PREALLOCATE
write_prealloc_layout() {
    cat >"$LAYOUT" <<EOL
version: 1
root: $ROOT
pools:
  state:
    backend: loop-xfs
    volume_size: $1
    min_volumes: 1
    max_volumes: 1
    preallocate: true
  content:
    backend: loop-xfs
    volume_size: $2
    preallocate: $3
workspace:
  command: [/bin/true]
EOL
}

# allocated VOLUME: bytes of its backing file allocated on the host.
allocated() { echo $(( $(stat -c %b "$(img "$1")") * $(stat -c %B "$(img "$1")") )); }
apparent() { stat -c %s "$(img "$1")"; }
assert_no_holes() {
    local a s
    a=$(allocated "$1") s=$(apparent "$1")
    [ "$a" -ge "$s" ] || fail "$1: $2: only $a of $s bytes allocated (holes)"
    log "$1: $2: $a of $s bytes allocated"
}
# discard_max VOLUME: queue/discard_max_bytes of its loop device.
discard_max() {
    local dev
    dev=$(loop_of "$1")
    [ -n "$dev" ] || fail "$1: no loop device for $(img "$1")"
    cat "/sys/block/${dev#/dev/}/queue/discard_max_bytes"
}
# trim_refused VOLUME WHEN: a file written and deleted, then fstrim: it
# must fail (discard unsupported) and the backing file keep every byte.
trim_refused() {
    assert_eq 0 "$(discard_max "$1")" "$1: $2: discard_max_bytes"
    dd if=/dev/zero of="$(mnt "$1")/scratch" bs=1M count=32 oflag=direct conv=fsync status=none
    rm "$(mnt "$1")/scratch" && sync -f "$(mnt "$1")"
    if fstrim -v "$(mnt "$1")" >"$WORK/trim.out" 2>&1; then
        fail "$1: $2: fstrim worked on a preallocated volume: $(cat "$WORK/trim.out")"
    fi
    log "$1: $2: fstrim refused: $(cat "$WORK/trim.out")"
    assert_no_holes "$1" "$2, after fstrim"
}
assert_sparse() {
    local a s
    a=$(allocated "$1") s=$(apparent "$1")
    [ "$a" -lt "$s" ] || fail "$1: $2: expected a sparse file, $a of $s bytes allocated"
    log "$1: $2: sparse ($a of $s bytes allocated)"
}

write_prealloc_layout 320MiB 320MiB false
lctl plan >"$WORK/plan1"
grep -q '^+ state-0 .*create preallocated backing file' "$WORK/plan1" || fail "plan: $(cat "$WORK/plan1")"
grep -q '^+ content-0 .*create sparse backing file' "$WORK/plan1" || fail "plan: $(cat "$WORK/plan1")"
lctl apply >"$WORK/apply1" || fail "apply failed: $(cat "$WORK/apply1")"
assert_up state-0 xfs
assert_up content-0 xfs
assert_no_holes state-0 "after carve"
assert_sparse content-0 "after carve"

for v in state-0 content-0; do
    dd if=/dev/urandom of="$(mnt $v)/data.bin" bs=1M count=32 oflag=direct conv=fsync status=none
    (cd "$(mnt $v)" && sha256sum data.bin >"$WORK/$v.sums")
done

log "discards: off on the preallocated volume, on on the sparse one"
trim_refused state-0 "after carve"
[ "$(discard_max content-0)" -gt 0 ] || fail "content-0 (sparse): discards should be on"
dd if=/dev/zero of="$(mnt content-0)/scratch" bs=1M count=32 oflag=direct conv=fsync status=none
before=$(allocated content-0)
rm "$(mnt content-0)/scratch" && sync -f "$(mnt content-0)"
fstrim "$(mnt content-0)" || fail "content-0 (sparse): fstrim failed"
after=$(allocated content-0)
[ "$after" -lt "$before" ] || fail "content-0 (sparse): fstrim gave nothing back ($before -> $after bytes allocated)"
log "content-0 (sparse): fstrim gave back $(( (before - after) / 1024 / 1024 )) MiB (the control)"

log "grow online: state stays preallocated, content turns preallocate on"
write_prealloc_layout 640MiB 640MiB true
lctl plan >"$WORK/plan2"
grep -q '^~ state-0 .*grow state-0 from 320MiB to 640MiB' "$WORK/plan2" || fail "no grow: $(cat "$WORK/plan2")"
lctl apply >"$WORK/apply2" || fail "grow apply failed: $(cat "$WORK/apply2")"
for v in state-0 content-0; do
    size=$(df -B1 --output=size "$(mnt $v)" | tail -n1)
    [ "$size" -gt $((500 * 1024 * 1024)) ] || fail "$v did not grow: $size bytes"
    assert_eq $((640 * 1024 * 1024)) "$(apparent $v)" "$v backing file size after grow"
    assert_no_holes $v "after grow"
    (cd "$(mnt $v)" && sha256sum -c --quiet "$WORK/$v.sums") || fail "$v: data changed by the grow"
done
assert_eq "No changes." "$(lctl plan)" "plan after grow"
# The grow keeps state-0's discards off and turns content-0's off with its
# preallocation.
trim_refused state-0 "after grow"
trim_refused content-0 "after grow, preallocate turned on"

log "re-attach (as after a reboot): discards off again"
lctl teardown >/dev/null || fail "teardown (keeping data) failed"
assert_down state-0
lctl apply >"$WORK/apply3" || fail "re-attach failed: $(cat "$WORK/apply3")"
assert_up state-0 xfs
trim_refused state-0 "after re-attach"
trim_refused content-0 "after re-attach"
for v in state-0 content-0; do
    (cd "$(mnt $v)" && sha256sum -c --quiet "$WORK/$v.sums") || fail "$v: data changed"
done

lctl teardown --destroy-data >/dev/null || fail "teardown failed"
assert_down state-0
assert_down content-0
log "PASS"
