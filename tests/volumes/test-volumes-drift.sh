#!/usr/bin/env bash
# Drift between the record and reality, and repair: a volume mounted by hand
# elsewhere, a buffered attach, a deleted backing file, a corrupt record.
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/volumes/lib.sh"

write_layout loop-ext4 256MiB loop-ext4 256MiB
lctl apply >/dev/null || fail "apply failed"

log "attached buffered by hand and unmounted: plan re-attaches with DIO"
l=$(loop_of state-0)
umount "$(mnt state-0)"
losetup -d "$l"
losetup -f --direct-io=off "$(img state-0)"
lctl plan | grep -q '^- state-0 .*detach' || fail "buffered attach not re-attached"
lctl apply >/dev/null || fail "apply failed"
assert_up state-0 ext4

log "mounted by hand elsewhere: drift, then repair mounts it at its path too"
l=$(loop_of state-0)
umount "$(mnt state-0)"
mkdir -p "$WORK/elsewhere"
mount "$l" "$WORK/elsewhere"
lctl plan | grep -q "^? state-0 .*mounted by hand on $WORK/elsewhere" || fail "hand mount not reported"
lctl repair >"$WORK/repair1" || fail "repair failed: $(cat "$WORK/repair1")"
assert_up state-0 ext4
umount "$WORK/elsewhere"

log "backing file deleted: drift; repair refuses without --forget-missing"
l=$(loop_of content-0)
umount "$(mnt content-0)"
losetup -d "$l"
rm -f "$(img content-0)"
lctl plan | grep -q '^? content-0 .*backing file is missing' || fail "deleted file not reported"
lctl apply >/dev/null && fail "apply succeeded with a deleted backing file"
[ ! -e "$(img content-0)" ] || fail "apply re-created a deleted formatted volume"
lctl repair >/dev/null && fail "repair forgot without --forget-missing"
lctl repair --forget-missing >/dev/null || fail "repair --forget-missing failed"
lctl apply >/dev/null || fail "apply after forget failed"
assert_up content-0 ext4
assert_up state-0 ext4

log "a corrupt record is never overwritten"
cp "$ROOT/layoutd-state.json" "$WORK/good.json"
printf '{"version": 1, "volumes": [' >"$ROOT/layoutd-state.json"
lctl apply >/dev/null 2>&1 && fail "apply accepted a corrupt record"
assert_eq '{"version": 1, "volumes": [' "$(cat "$ROOT/layoutd-state.json")" "corrupt record untouched"
printf '{"version": 99}' >"$ROOT/layoutd-state.json"
lctl plan >/dev/null 2>&1 && fail "plan accepted a newer record"
cp "$WORK/good.json" "$ROOT/layoutd-state.json"
assert_eq "No changes." "$(lctl plan)" "plan with the record restored"
log "PASS"
