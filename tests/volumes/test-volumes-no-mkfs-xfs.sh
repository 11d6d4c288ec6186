#!/usr/bin/env bash
# mkfs.xfs missing from PATH: a clean error for the xfs volume (rolled
# back: no file, no loop, no record entry), the ext4 volume up.
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/volumes/lib.sh"

mkdir -p "$WORK/bin"
for t in mkfs.ext4 resize2fs; do ln -s "$(command -v $t)" "$WORK/bin/$t"; done
write_layout loop-ext4 256MiB loop-xfs 320MiB

set +e
PATH="$WORK/bin" "$LAYOUTCTL" apply --layout "$LAYOUT" --root "$ROOT" >"$WORK/apply"
rc=$?
set -e
cat "$WORK/apply" >&2
assert_eq 1 "$rc" "apply exit status"
grep -q 'mkfs.xfs not found: install xfsprogs' "$WORK/apply" || fail "no clean message for missing mkfs.xfs"
assert_up state-0 ext4
[ ! -e "$(img content-0)" ] || fail "content-0.img left behind"
[ -z "$(loop_of content-0)" ] || fail "content-0 loop left behind"
grep -q '"content-0"' "$ROOT/layoutd-state.json" && fail "content-0 left in the record"

log "with mkfs.xfs back, apply completes"
if command -v mkfs.xfs >/dev/null; then
    lctl apply >/dev/null || fail "apply with mkfs.xfs failed"
    assert_up content-0 xfs
fi
log "PASS"
