#!/usr/bin/env bash
# A backing file that already holds a foreign ext4 (another UUID) where
# images/state-0.img goes: refused, byte-identical afterwards, the other
# volumes up. Also: a LUKS-like/partition-table signature and our own fs
# type recorded with another UUID are refused the same way.
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/volumes/lib.sh"

write_layout loop-ext4 256MiB loop-ext4 256MiB 2
mkdir -p "$ROOT/images"
truncate -s 256M "$(img state-0)"
mkfs.ext4 -q -F -L foreign "$(img state-0)"
foreign_uuid=$(uuid_of state-0)
sum_before=$(sha256sum <"$(img state-0)")
# A partition table on content-1's file.
truncate -s 256M "$(img content-1)"
# An MBR with one Linux partition (LBA 2048, 64 MiB), written by hand so
# that the test needs no fdisk.
python3 - "$(img content-1)" <<'PY'
import struct, sys
with open(sys.argv[1], "r+b") as f:
    entry = struct.pack("<B3sB3sII", 0, b"\0\0\0", 0x83, b"\0\0\0", 2048, 131072)
    f.seek(440); f.write(struct.pack("<I", 0x1234abcd))
    f.seek(446); f.write(entry)
    f.seek(510); f.write(b"\x55\xaa")
PY
[ "$(blkid -p -s PTTYPE -o value "$(img content-1)")" = dos ] || fail "test setup: no dos partition table"
sum_c1=$(sha256sum <"$(img content-1)")

lctl plan >"$WORK/plan" || fail "plan failed"
cat "$WORK/plan" >&2
grep -q "^! state-0 .*ext4 (UUID $foreign_uuid) that layoutd did not create" "$WORK/plan" || fail "foreign ext4 not refused in plan"
grep -q "^! content-1 .*dos" "$WORK/plan" || fail "partition table not refused in plan"

set +e
lctl apply >"$WORK/apply"
rc=$?
set -e
cat "$WORK/apply" >&2
assert_eq 1 "$rc" "apply exit status with a refused volume"
grep -q '^state-0 .*refused' "$WORK/apply" || fail "state-0 not reported refused"
assert_eq "$sum_before" "$(sha256sum <"$(img state-0)")" "state-0.img byte-identical"
assert_eq "$sum_c1" "$(sha256sum <"$(img content-1)")" "content-1.img byte-identical"
[ -z "$(loop_of state-0)" ] || fail "refused volume was attached"
assert_up content-0 ext4
grep -q '"state-0"' "$ROOT/layoutd-state.json" && fail "refused volume entered the record"

log "our own fs type, but with a UUID the record does not know: refused"
l=$(loop_of content-0)
umount "$(mnt content-0)"
losetup -d "$l"
mkfs.ext4 -q -F "$(img content-0)"
sum_c0=$(sha256sum <"$(img content-0)")
lctl plan | grep -q '^! content-0 .*record says ext4 UUID' || fail "changed UUID not refused"
lctl apply >/dev/null && fail "apply succeeded over a changed UUID"
assert_eq "$sum_c0" "$(sha256sum <"$(img content-0)")" "content-0.img byte-identical"
log "PASS"
