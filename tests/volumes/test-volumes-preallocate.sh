#!/usr/bin/env bash
# preallocate: true (docs/layout.md) on real loop devices: the backing file
# of a preallocated pool has no holes after the carve, nor after an online
# grow (XFS; ext4 cannot grow here without CAP_SYS_RESOURCE); a sparse pool
# next to it stays sparse (the control: the check can fail); a sparse
# volume whose pool turns preallocate on gets its old holes filled at its
# next grow; the data survives.
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/volumes/lib.sh"
require_cmd mkfs.xfs
require_cmd xfs_growfs

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

lctl teardown --destroy-data >/dev/null || fail "teardown failed"
assert_down state-0
assert_down content-0
log "PASS"
