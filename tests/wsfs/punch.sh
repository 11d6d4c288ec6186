#!/usr/bin/env bash
# Every stub whose object is durable is punched eventually (issue 35.3):
#   1. a stub opened between its store and its batch's end (the punch
#      finds a handle open) is punched at its last close;
#   2. a stub found whole at start (a batch that failed, a daemon killed
#      between its batch and its punch; made here by writing the data back
#      and setting the marker, as such a file is) is punched by the walk at
#      start; `layoutd-wsfs fsck` lists it as held twice until then.
# Reads give the same bytes throughout.
TEST_NAME=wsfs-punch
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/wsfs/lib.sh"
require_cmd getfattr; require_cmd setfattr

stat_ge() { [ "$(stat_get "$1" "$2")" -ge "$3" ]; }
blocks() { stat -c %b "$1"; }
whole_blocks() { echo $(( ($(stat -c %s "$1") + 511) / 512 )); }
is_punched() { [ "$(blocks "$1")" -lt 64 ]; }
has_marker() { getfattr --absolute-names -n user.wsfs.whole "$1" >/dev/null 2>&1; }
fsck_json() { "$WSFS" fsck --content "$WORK/content" --state-root "$WORK/p/state" --json; }

head -c $((4 * 1024 * 1024 + 5)) /dev/urandom >"$WORK/big"
sum=$(sha256sum <"$WORK/big")
s=$WORK/p/state/f1

# ---- 1. a handle open when the batch ends ----
# 100 ms per MiB copied into the pool: the open below comes well before
# the object is published, so its batch's punch finds the handle.
export LAYOUTD_WSFS_TEST_COPY_DELAY_MS=100
wsfs_start p --commit=fdatasync
unset LAYOUTD_WSFS_TEST_COPY_DELAY_MS
cp "$WORK/big" "$WORK/p/mnt/f1"
exec 3<"$WORK/p/mnt/f1"
wait_for 20 stat_ge p punches_pending 1 || fail "the punch was not kept for later: $(cat "$WORK/p/stats.json")"
assert_eq 0 "$(stat_get p stubs_punched)" "punched while a handle was open"
[ "$(blocks "$s")" -ge "$(whole_blocks "$s")" ] || fail "the stub lost its data while a handle was open"
assert_eq "$sum" "$(sha256sum <&3)" "read through the handle held open"
exec 3<&-
wait_for 10 stat_ge p stubs_punched 1 || fail "not punched at its last close: $(cat "$WORK/p/stats.json")"
# The count is written after the punch (the stats file lags the counters
# by one write): waited for, not read at once.
none_pending() { [ "$(stat_get p punches_pending)" = 0 ]; }
wait_for 10 none_pending || fail "punches pending after the close: $(cat "$WORK/p/stats.json")"
is_punched "$s" || fail "f1 not punched after its last close: $(blocks "$s") blocks"
! has_marker "$s" || fail "f1 punched but still marked whole"
assert_eq "$sum" "$(sha256sum <"$WORK/p/mnt/f1")" "f1 after the punch"
wsfs_stop p "$WSFS_PID"

# ---- 2. whole at start ----
h=$(getfattr --absolute-names --only-values -n user.wsfs.cas "$s")
assert_eq "$(sha256sum <"$WORK/big" | cut -d' ' -f1)" "$h" "f1's reference"
dd if="$WORK/big" of="$s" conv=notrunc status=none && sync "$s" || fail "writing f1's data back"
setfattr -n user.wsfs.whole -v 1 "$s"
[ "$(blocks "$s")" -ge "$(whole_blocks "$s")" ] || fail "f1 not whole again"
out=$(fsck_json) || fail "fsck: $out"
assert_eq 1 "$(sed -n 's/.*"held_twice":\([0-9]*\).*/\1/p' <<<"$out")" "fsck's files held twice"
grep -q "\"path\":\"$s\"" <<<"$out" || fail "fsck does not list f1 as held twice: $out"
"$WSFS" fsck --content "$WORK/content" --state-root "$WORK/p/state" | grep -q "^twice $h" ||
    fail "fsck's text does not list f1"
wsfs_start p --commit=fdatasync
wait_for 20 stat_ge p stubs_found_whole 1 || fail "the walk at start did not find f1: $(cat "$WORK/p/stats.json")"
wait_for 20 stat_ge p stubs_punched 1 || fail "f1 not punched at start: $(cat "$WORK/p/stats.json"); $(cat "$WORK/p/log")"
is_punched "$s" || fail "f1 not punched at start: $(blocks "$s") blocks"
! has_marker "$s" || fail "f1 punched at start but still marked whole"
assert_eq "$sum" "$(sha256sum <"$WORK/p/mnt/f1")" "f1 after the punch at start"
out=$(fsck_json) || fail "fsck after: $out"
grep -q '"held_twice":0' <<<"$out" || fail "fsck still lists files held twice: $out"
wsfs_stop p "$WSFS_PID"
log "PASS"
