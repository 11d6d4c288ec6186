#!/usr/bin/env bash
# The content-addressed pool: two workspaces sharing one content dir store
# a large file once (dedup), reads come from the object, a write copies it
# back, objects land in the shard the README defines, and a stub whose
# object is missing (crash before commit) falls back to its own data only
# when it is known to be whole (missing.sh has the cases where it is not).
TEST_NAME=wsfs-cas
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/wsfs/lib.sh"
require_cmd getfattr

objects() { find "$@" -path '*/objects/*' -type f ! -name '.tmp.*' | wc -l; }
stat_ge() { [ "$(stat_get "$1" "$2")" -ge "$3" ]; }
punched() { [ "$(stat_get "$1" stubs_punched)" -ge "$2" ]; }

head -c $((3 * 1024 * 1024 + 17)) /dev/urandom > "$WORK/big"
sum=$(sha256sum < "$WORK/big")

wsfs_start ws1; pid1=$WSFS_PID
wsfs_start ws2; pid2=$WSFS_PID
cp "$WORK/big" "$WORK/ws1/mnt/big"
wait_for 10 punched ws1 1 || fail "ws1 did not store and punch the object: $(cat "$WORK/ws1/stats.json")"
cp "$WORK/big" "$WORK/ws2/mnt/copy"
wait_for 10 punched ws2 1 || fail "ws2 did not store and punch: $(cat "$WORK/ws2/stats.json")"

assert_eq 1 "$(objects "$WORK/content")" "objects in the shared pool"
assert_eq 1 "$(stat_get ws1 objects_stored)" "ws1 stored"
assert_eq 0 "$(stat_get ws1 objects_deduplicated)" "ws1 deduplicated"
assert_eq 0 "$(stat_get ws2 objects_stored)" "ws2 stored"
assert_eq 1 "$(stat_get ws2 objects_deduplicated)" "ws2 deduplicated"

# The object is the content, named by its digest, at the documented path.
h=$(sha256sum < "$WORK/big" | cut -d' ' -f1)
cmp "$WORK/big" "$WORK/content/objects/${h:0:2}/$h" || fail "object content"
assert_eq "$h" "$(getfattr --absolute-names --only-values -n user.wsfs.cas "$WORK/ws2/state/copy")" "stub xattr"
# The stub keeps the apparent size but no longer the data blocks.
assert_eq "$(stat -c %s "$WORK/big")" "$(stat -c %s "$WORK/ws1/state/big")" "stub apparent size"
[ "$(stat -c %b "$WORK/ws1/state/big")" -lt 64 ] || fail "stub not punched: $(stat -c %b "$WORK/ws1/state/big") blocks"
assert_eq "$(stat -c %s "$WORK/big")" "$(stat -c %s "$WORK/ws1/mnt/big")" "getattr size of a stub"

# Reads come from the object.
assert_eq "$sum" "$(sha256sum < "$WORK/ws1/mnt/big")" "ws1 read back"
assert_eq "$sum" "$(sha256sum < "$WORK/ws2/mnt/copy")" "ws2 read back"
# Also after a restart (no kernel cache left).
wsfs_stop ws1 "$pid1"; wsfs_start ws1; pid1=$WSFS_PID
assert_eq "$sum" "$(sha256sum < "$WORK/ws1/mnt/big")" "read back after restart"

# A write copies the file back (copy-up), keeps its mtime until written,
# and changes only this workspace's file; the object stays as it was.
mt=$(stat -c %Y "$WORK/ws1/mnt/big")
printf 'XYZ' | dd of="$WORK/ws1/mnt/big" bs=1 seek=1000 conv=notrunc status=none
wait_for 10 stat_ge ws1 copy_ups 1 || fail "no copy-up counted: $(cat "$WORK/ws1/stats.json")"
{ head -c 1000 "$WORK/big"; printf 'XYZ'; tail -c +1004 "$WORK/big"; } > "$WORK/big.expected"
cmp "$WORK/big.expected" "$WORK/ws1/mnt/big" || fail "content after copy-up + write"
assert_eq "$sum" "$(sha256sum < "$WORK/ws2/mnt/copy")" "the other workspace is untouched"
cmp "$WORK/big" "$WORK/content/objects/${h:0:2}/$h" || fail "object changed by a copy-up"
# ... and, being large and released, it becomes a new object.
wait_for 10 stat_ge ws1 objects_stored 1 || fail "modified file not stored"
wait_for 10 eval '[ "$(objects "$WORK/content")" = 2 ]' || fail "expected 2 objects, got $(objects "$WORK/content")"
cmp "$WORK/big.expected" "$WORK/ws1/mnt/big" || fail "content after re-store"
[ "$mt" -le "$(stat -c %Y "$WORK/ws1/mnt/big")" ] || fail "mtime went backwards"

# Truncating a stub (setattr) and opening one with O_TRUNC.
truncate -s 10 "$WORK/ws2/mnt/copy"
assert_eq "$(head -c 10 "$WORK/big" | sha256sum)" "$(sha256sum < "$WORK/ws2/mnt/copy")" "truncated stub"
! getfattr --absolute-names -n user.wsfs.cas "$WORK/ws2/state/copy" >/dev/null 2>&1 || fail "truncated file still a stub"
cp "$WORK/big" "$WORK/ws2/mnt/copy2"
wait_for 10 punched ws2 2 || fail "copy2 not punched: $(cat "$WORK/ws2/stats.json")"
printf 'short\n' > "$WORK/ws2/mnt/copy2"
assert_eq short "$(cat "$WORK/ws2/mnt/copy2")" "O_TRUNC over a stub"
wsfs_stop ws1 "$pid1"
wsfs_stop ws2 "$pid2"

# Shards: two content dirs; each object lives in shard
# (first 4 hex digits as a 16-bit number) % 2.
mkdir -p "$WORK/c0" "$WORK/c1"
WSFS_CONTENT=$WORK/c0,$WORK/c1 LAYOUTD_SHARDS=2 wsfs_start sh --cas-threshold=4096
for i in 1 2 3 4 5 6 7 8; do head -c 5000 /dev/urandom > "$WORK/sh/mnt/f$i"; done
wait_for 10 punched sh 8 || fail "shard files not stored: $(cat "$WORK/sh/stats.json")"
for i in 1 2 3 4 5 6 7 8; do
    d=$(sha256sum < "$WORK/sh/mnt/f$i" | cut -d' ' -f1)
    shard=$(( 0x${d:0:4} % 2 ))
    [ -f "$WORK/c$shard/objects/${d:0:2}/$d" ] || fail "f$i ($d) not in shard $shard"
done
assert_eq 8 "$(objects "$WORK/c0" "$WORK/c1")" "objects over both shards"
wsfs_stop sh "$WSFS_PID"

# A stub whose object never became durable (crash before the commit)
# still holds its data and its whole-data marker: the daemon checks that
# the data hashes to the digest, serves it and drops the reference.
mkdir -p "$WORK/rep/state"
head -c 100000 /dev/urandom > "$WORK/rep/state/orphan"
setfattr -n user.wsfs.whole -v 1 "$WORK/rep/state/orphan"
setfattr -n user.wsfs.cas -v "$(sha256sum < "$WORK/rep/state/orphan" | cut -d' ' -f1)" "$WORK/rep/state/orphan"
WSFS_CONTENT=$WORK/content wsfs_start rep
cmp "$WORK/rep/state/orphan" "$WORK/rep/mnt/orphan" || fail "stub without object"
! getfattr --absolute-names -n user.wsfs.cas "$WORK/rep/state/orphan" >/dev/null 2>&1 || fail "reference not dropped"
# The same without the marker (an older daemon's stub, or a punched one):
# EIO, and the reference stays.
head -c 100000 /dev/urandom > "$WORK/rep/state/orphan2"
setfattr -n user.wsfs.cas -v "$(sha256sum < "$WORK/rep/state/orphan2" | cut -d' ' -f1)" "$WORK/rep/state/orphan2"
! cat "$WORK/rep/mnt/orphan2" > /dev/null 2>&1 || fail "a stub without the marker was served from its own data"
getfattr --absolute-names -n user.wsfs.cas "$WORK/rep/state/orphan2" >/dev/null 2>&1 || fail "reference dropped"
wsfs_stop rep "$WSFS_PID"
log "ok"
