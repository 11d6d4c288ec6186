#!/usr/bin/env bash
# The root on a small tmpfs: volumes that do not all fit. The one that does
# not fit fails cleanly (nothing left behind for it), the others are up.
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/volumes/lib.sh"

mkdir -p "$ROOT"
mount -t tmpfs -o size=300M layoutd-test "$ROOT" || skip "cannot mount tmpfs"
write_layout loop-ext4 256MiB loop-ext4 200MiB

set +e
lctl apply >"$WORK/apply"
rc=$?
set -e
cat "$WORK/apply" >&2
assert_eq 1 "$rc" "apply exit status"
# state-0 (256 MiB) fits on 300 MiB; content-0 (200 MiB more) does not.
l=$(loop_of state-0)
[ -n "$l" ] || fail "state-0 not attached"
assert_eq ext4 "$(findmnt -n -o FSTYPE --mountpoint "$(mnt state-0)")" "state-0 mounted"
grep -q '^content-0 .*failed' "$WORK/apply" || fail "content-0 not reported failed"
grep -q 'not enough space' "$WORK/apply" || fail "no clean ENOSPC message"
[ ! -e "$(img content-0)" ] || fail "content-0.img left behind"
[ -z "$(loop_of content-0)" ] || fail "content-0 loop left behind"
! findmnt --mountpoint "$(mnt content-0)" >/dev/null || fail "content-0 mounted"
python3 - "$ROOT/layoutd-state.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
names = [v["name"] for v in d["volumes"]]
assert names == ["state-0"], names
PY
# tmpfs may refuse O_DIRECT: then the fallback must be reported, not hidden.
if [ "$(cat /sys/block/"${l#/dev/}"/loop/dio)" = 0 ]; then
    grep -q 'direct I/O refused' "$WORK/apply" || fail "silent DIO fallback"
fi
log "PASS"
