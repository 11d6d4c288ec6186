#!/usr/bin/env bash
# Acceptance of the Volumes engine on real loop devices: apply a loop-ext4
# state pool and a loop-xfs content pool; idempotence; a simulated reboot
# re-attaches without mkfs; online grow under a writer; teardown.
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/volumes/lib.sh"
require_cmd mkfs.xfs
require_cmd xfs_growfs

# A PATH shim that logs every mkfs call: apply looks mkfs up in PATH.
mkdir -p "$WORK/shim"
for t in mkfs.ext4 mkfs.xfs; do
    real=$(command -v $t)
    printf '#!/bin/sh\necho "%s $*" >>%s\nexec %s "$@"\n' "$t" "$WORK/mkfs.log" "$real" >"$WORK/shim/$t"
    chmod +x "$WORK/shim/$t"
done
export PATH="$WORK/shim:$PATH"
: >"$WORK/mkfs.log"

write_layout loop-ext4 256MiB loop-xfs 320MiB

log "first plan lists the carving"
lctl plan >"$WORK/plan1"
grep -q '^+ state-0 .*format state-0 as ext4' "$WORK/plan1" || fail "plan lacks ext4 format: $(cat "$WORK/plan1")"
grep -q '^+ content-0 .*format content-0 as xfs' "$WORK/plan1" || fail "plan lacks xfs format"

log "apply"
lctl apply >"$WORK/apply1" || fail "apply failed: $(cat "$WORK/apply1")"
assert_up state-0 ext4
assert_up content-0 xfs
assert_eq 2 "$(wc -l <"$WORK/mkfs.log")" "mkfs runs in the first apply"
# Sparse: the backing files were not written out in full.
alloc=$(du -k "$(img state-0)" | cut -f1)
[ "$alloc" -lt $((256 * 1024)) ] || fail "state-0.img is not sparse ($alloc KiB)"
# The record knows the UUIDs mkfs made.
u_state=$(uuid_of state-0); u_content=$(uuid_of content-0)
grep -q "$u_state" "$ROOT/layoutd-state.json" || fail "record lacks state-0 UUID"
grep -q "$u_content" "$ROOT/layoutd-state.json" || fail "record lacks content-0 UUID"
assert_eq "ld-state-0" "$(blkid -p -s LABEL -o value "$(img state-0)")" "state-0 label"

log "second plan is empty, second apply changes nothing"
assert_eq "No changes." "$(lctl plan)" "second plan"
lctl plan --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["actions"]==0 and d["steps"]==[], d'
lctl apply --json >"$WORK/apply2.json" || fail "second apply failed"
python3 - "$WORK/apply2.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"], d
for v in d["volumes"]:
    assert v["outcome"] == "unchanged", v
    assert v["steps"] == [], v
assert sorted(v["volume"] for v in d["volumes"]) == ["content-0", "state-0"], d
PY

log "write data, then simulate a reboot (unmount + detach, files kept)"
for v in state-0 content-0; do
    dd if=/dev/urandom of="$(mnt $v)/data.bin" bs=1M count=8 status=none
    mkdir -p "$(mnt $v)/dir" && echo "hello $v" >"$(mnt $v)/dir/file"
    (cd "$(mnt $v)" && sha256sum data.bin dir/file) >"$WORK/$v.sums"
done
sync
for v in state-0 content-0; do
    l=$(loop_of $v)
    umount "$(mnt $v)"
    losetup -d "$l"
done
assert_down state-0
assert_down content-0

log "plan after the reboot: attach + mount, no format"
lctl plan >"$WORK/plan3"
grep -q 'attach' "$WORK/plan3" || fail "no attach after reboot: $(cat "$WORK/plan3")"
! grep -q 'format' "$WORK/plan3" || fail "format planned after reboot: $(cat "$WORK/plan3")"
lctl apply >"$WORK/apply3" || fail "re-apply failed: $(cat "$WORK/apply3")"
! grep -q 'format' "$WORK/apply3" || fail "apply formatted after reboot"
assert_eq 2 "$(wc -l <"$WORK/mkfs.log")" "no mkfs after reboot"
assert_up state-0 ext4
assert_up content-0 xfs
assert_eq "$u_state" "$(uuid_of state-0)" "state-0 UUID after reboot"
assert_eq "$u_content" "$(uuid_of content-0)" "content-0 UUID after reboot"
for v in state-0 content-0; do
    (cd "$(mnt $v)" && sha256sum -c --quiet "$WORK/$v.sums") || fail "$v: checksums differ after reboot"
done

log "grow while mounted and written to"
write_layout loop-ext4 512MiB loop-xfs 512MiB
lctl plan >"$WORK/plan4"
grep -q '^~ state-0 .*grow state-0 from 256MiB to 512MiB' "$WORK/plan4" || fail "no ext4 grow: $(cat "$WORK/plan4")"
grep -q '^~ content-0 .*grow content-0 from 320MiB to 512MiB' "$WORK/plan4" || fail "no xfs grow"
for v in state-0 content-0; do
    dd if=/dev/urandom of="$(mnt $v)/during-grow.bin" bs=1M count=64 conv=fsync status=none &
    track_pid $!
    echo $! >"$WORK/$v.writer"
done
set +e
lctl apply >"$WORK/apply4"
rc=$?
set -e
for v in state-0 content-0; do
    wait "$(cat "$WORK/$v.writer")" || fail "$v: writer failed during grow"
done
cat "$WORK/apply4" >&2
# XFS grows online with CAP_SYS_ADMIN.
size=$(df -B1 --output=size "$(mnt content-0)" | tail -n1)
[ "$size" -gt $((400 * 1024 * 1024)) ] || fail "content-0 did not grow: $size bytes"
# ext4 online resize needs CAP_SYS_RESOURCE (ext4_resize_begin).
cap_sys_resource=$(( (0x$(awk '/^CapEff/ {print $2}' /proc/self/status) >> 24) & 1 ))
if [ "$cap_sys_resource" -eq 1 ]; then
    [ $rc -eq 0 ] || fail "grow apply failed"
    size=$(df -B1 --output=size "$(mnt state-0)" | tail -n1)
    [ "$size" -gt $((400 * 1024 * 1024)) ] || fail "state-0 did not grow: $size bytes"
    assert_eq "No changes." "$(lctl plan)" "plan after grow"
else
    log "no CAP_SYS_RESOURCE here: ext4 online resize must fail cleanly"
    [ $rc -eq 1 ] || fail "apply should report the ext4 grow failure"
    grep -q 'CAP_SYS_RESOURCE' "$WORK/apply4" || fail "ext4 grow error does not say why"
    assert_up state-0 ext4
    # The failed grow is retried by the next plan (the record keeps the old size).
    lctl plan | grep -q 'grow state-0' || fail "failed grow not retried by plan"
fi
for v in state-0 content-0; do
    (cd "$(mnt $v)" && sha256sum -c --quiet "$WORK/$v.sums") || fail "$v: data changed by grow"
done

log "shrink is refused, nothing changed"
write_layout loop-ext4 512MiB loop-xfs 384MiB
before=$(stat -c %s "$(img content-0)")
lctl plan | grep -q '^! content-0 .*refuse to shrink' || fail "shrink not refused"
lctl apply >/dev/null || true
assert_eq "$before" "$(stat -c %s "$(img content-0)")" "content-0 size after refused shrink"
assert_up content-0 xfs

log "teardown: no loop, no mount; files and record kept (what a reboot leaves)"
lctl teardown >"$WORK/td1" || fail "teardown failed: $(cat "$WORK/td1")"
assert_down state-0
assert_down content-0
[ -f "$ROOT/layoutd-state.json" ] || fail "teardown without --destroy-data dropped the record"
[ -f "$(img state-0)" ] && [ -f "$(img content-0)" ] || fail "teardown deleted files"
grep -q "kept in the record" "$WORK/td1" || fail "teardown does not say what it kept: $(cat "$WORK/td1")"

log "the kept set is attached again as a whole, without mkfs, data intact"
write_layout loop-ext4 512MiB loop-xfs 512MiB # the sizes it has (no shrink note)
lctl plan >"$WORK/plan-kept"
grep -q "format" "$WORK/plan-kept" && fail "a kept volume would be formatted again: $(cat "$WORK/plan-kept")"
grep -q '^!' "$WORK/plan-kept" && fail "a kept volume is refused: $(cat "$WORK/plan-kept")"
# (state-0's ext4 still waits for the online resize this host cannot do:
# that step fails again, and the volume stays in service all the same.)
lctl apply >"$WORK/apply-kept" || grep -q "CAP_SYS_RESOURCE" "$WORK/apply-kept" ||
    fail "apply of the kept set failed: $(cat "$WORK/apply-kept")"
log "apply of the kept set: $(cat "$WORK/apply-kept")"
assert_up state-0 ext4
assert_up content-0 xfs
for v in state-0 content-0; do
    (cd "$(mnt $v)" && sha256sum -c --quiet "$WORK/$v.sums") || fail "$v: data changed by teardown and apply"
done
lctl teardown >/dev/null || fail "second teardown failed"

log "teardown --destroy-data --dry-run changes nothing; then it removes everything"
lctl apply >/dev/null || true # (the ext4 grow still fails here)
assert_up state-0 ext4
lctl teardown --destroy-data --dry-run >"$WORK/td-dry" || fail "dry run refused: $(cat "$WORK/td-dry")"
grep -q "^- state-0 .*delete $(img state-0)" "$WORK/td-dry" || fail "dry run does not show the delete: $(cat "$WORK/td-dry")"
assert_up state-0 ext4
[ -f "$(img state-0)" ] || fail "dry run deleted a file"
lctl teardown --destroy-data >"$WORK/td2" || fail "teardown --destroy-data failed: $(cat "$WORK/td2")"
assert_down state-0
assert_down content-0
[ ! -e "$(img state-0)" ] && [ ! -e "$(img content-0)" ] || fail "files left after --destroy-data"
[ ! -e "$(mnt state-0)" ] && [ ! -e "$(mnt content-0)" ] || fail "mount dirs left after --destroy-data"
[ ! -e "$ROOT/layoutd-state.json" ] || fail "record left after --destroy-data"
log "PASS"
