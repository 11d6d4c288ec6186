#!/usr/bin/env bash
# One workspace cannot take the shared pool (issue 19, defect 6), on
# loop-backed ext4 volumes:
#   1. a 1 TiB sparse file with one byte of data (the issue's repro) stays
#      out of the pool: the pool does not grow, nothing is hashed for
#      minutes, and the file reads back as written;
#   2. a copy into the pool stops when its file is deleted, replaced
#      (renamed over) or opened for writing meanwhile: the temporary file
#      goes, the pool's space comes back, no object is made (the copy is
#      slowed by the daemon's test hook so that it is still running);
#   3. a failed copy (the pool fills up in the middle) leaves no temporary
#      file;
#   4. --pool-share: a workspace over its share keeps new files whole in
#      its state dir while another workspace still publishes; the count
#      survives a restart (the walk at start), and a deletion is seen by
#      the recount the next store over the bound asks for.
TEST_NAME=wsfs-pool
: "${LAYOUTD_TESTS:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/wsfs/lib.sh"
require_cmd getfattr

wsfs_mkvol svol 1G ext4
wsfs_mkvol cvol 256M ext4 -m 0
C=$WORK/cvol
stat_ge() { [ "$(stat_get "$1" "$2")" -ge "$3" ]; }
# used_kib: the content volume's used space.
used_kib() { df -k --output=used "$C" | tail -1 | tr -d ' '; }
tmps() { find "$C/objects" -name '.tmp.*' | wc -l; }
objects() { find "$C/objects" -mindepth 2 -type f ! -name '.tmp.*' | wc -l; }
is_stub() { getfattr --absolute-names -n user.wsfs.cas "$1" >/dev/null 2>&1; }

# ---- 1. the 1 TiB sparse file ----
mkdir -p "$WORK/svol/a"
WSFS_CONTENT=$C wsfs_start a --state "$WORK/svol/a" --commit=fdatasync
m=$WORK/a/mnt
sync -f "$C"
base=$(used_kib)
truncate -s 1T "$m/f"
dd if=/dev/urandom of="$WORK/byte" bs=1 count=1 status=none
dd if="$WORK/byte" of="$m/f" bs=1 count=1 seek=1099511627000 conv=notrunc status=none
# The pool's use is sampled while the daemon decides.
( while :; do used_kib; sleep 0.1; done > "$WORK/used.samples" ) &
sampler=$!
track_pid "$sampler"
wait_for 20 stat_ge a sparse_kept 1 || fail "the sparse file was not kept out of the pool: $(cat "$WORK/a/stats.json")"
sleep 1
kill "$sampler"; wait "$sampler" 2>/dev/null || true
max=$(sort -n "$WORK/used.samples" | tail -1)
log "content volume used: $base KiB before, at most $max KiB while the 1 TiB file was closed"
[ "$max" -le $((base + 1024)) ] || fail "the pool grew by $((max - base)) KiB for a sparse file"
assert_eq 0 "$(tmps)" "temporary files in the pool"
assert_eq 0 "$(stat_get a objects_stored)" "objects stored"
! is_stub "$WORK/svol/a/f" || fail "the sparse file became a stub"
assert_eq 1099511627776 "$(stat -c %s "$m/f")" "the sparse file's size"
[ "$(stat -c %b "$WORK/svol/a/f")" -lt 64 ] || fail "the sparse file allocates $(stat -c %b "$WORK/svol/a/f") blocks in the state dir"
cmp <(dd if="$m/f" bs=1 skip=1099511627000 count=1 status=none) "$WORK/byte" || fail "the byte written at 1 TiB - 776"
cmp <(head -c 1048576 "$m/f") <(head -c 1048576 /dev/zero) || fail "the first MiB of the sparse file"
cmp <(tail -c 775 "$m/f") <(head -c 775 /dev/zero) || fail "the end of the sparse file"
rm "$m/f"
# A dense file still goes to the pool (the rule only keeps holes out).
head -c 300000 /dev/urandom > "$WORK/dense"
cp "$WORK/dense" "$m/dense"
wait_for 20 stat_ge a stubs_punched 1 || fail "a dense file was not stored: $(cat "$WORK/a/stats.json")"
cmp "$WORK/dense" "$m/dense" || fail "the dense file read back"
wsfs_stop a "$WSFS_PID"

# ---- 2. copies that stop: deleted, replaced, opened for writing ----
# 100 ms per 1 MiB chunk: a 48 MiB copy takes ~5 s, and each check comes
# within 100 ms.
export LAYOUTD_WSFS_TEST_COPY_DELAY_MS=100
WSFS_CONTENT=$C wsfs_start a --state "$WORK/svol/a" --commit=fdatasync
unset LAYOUTD_WSFS_TEST_COPY_DELAY_MS
head -c $((48 * 1024 * 1024)) /dev/urandom > "$WORK/big"
sync -f "$C"
base=$(used_kib)
nobj=$(objects)
abandoned=0
for how in delete replace write; do
    cp "$WORK/big" "$m/big-$how"
    wait_for 10 eval '[ "$(tmps)" = 1 ]' || fail "$how: no copy into the pool under way"
    wait_for 10 eval '[ "$(find "$C/objects" -name ".tmp.*" -size +2M | wc -l)" = 1 ]' || fail "$how: the copy does not grow"
    case $how in
        delete) rm "$m/big-$how" ;;
        replace) echo other > "$m/other"; mv "$m/other" "$m/big-$how" ;;
        write) exec 3>> "$m/big-$how" ;;
    esac
    t0=$SECONDS
    wait_for 5 eval '[ "$(tmps)" = 0 ]' || fail "$how: the copy did not stop: $(find "$C/objects" -name '.tmp.*' -ls)"
    abandoned=$((abandoned + 1))
    wait_for 5 eval '[ "$(stat_get a copies_abandoned)" = $abandoned ]' || {
        kill -USR1 "$WSFS_PID"; sleep 0.3
        fail "$how: copies_abandoned: $(cat "$WORK/a/stats.json")"
    }
    log "$how: the copy stopped within $((SECONDS - t0)) s"
    [ "$how" != write ] || { cmp "$WORK/big" "$m/big-$how" || fail "the file opened during its copy"; exec 3>&-; }
done
assert_eq "$nobj" "$(objects)" "objects after three abandoned copies"
sync -f "$C"
now=$(used_kib)
log "content volume used: $base KiB before the copies, $now KiB after"
[ "$now" -le $((base + 1024)) ] || fail "the pool did not get its space back: $base KiB before, $now KiB after"
assert_eq 0 "$(stat_get a objects_stored)" "objects stored by abandoned copies"
! is_stub "$WORK/svol/a/big-write" || fail "the file written during its copy became a stub"
# the file opened for writing is closed now without being written: it is
# not copied again (it was not written since its last copy)
wsfs_stop a "$WSFS_PID"
rm -f "$WORK/svol/a"/big-* "$WORK/svol/a/dense"

# ---- 3. a copy that fails half-way leaves nothing behind ----
wsfs_mkvol small 16M ext4 -m 0 -O ^has_journal
mkdir -p "$WORK/svol/f"
WSFS_CONTENT=$WORK/small wsfs_start f --state "$WORK/svol/f"
head -c $((24 * 1024 * 1024)) /dev/urandom > "$WORK/toobig"
cp "$WORK/toobig" "$WORK/f/mnt/toobig"
wait_for 20 stat_ge f cas_errors 1 || fail "the copy into a small pool did not fail: $(cat "$WORK/f/stats.json")"
assert_eq 0 "$(find "$WORK/small/objects" -name '.tmp.*' | wc -l)" "temporary files after a failed copy"
[ "$(df -k --output=used "$WORK/small" | tail -1)" -lt 4096 ] || fail "the failed copy's space was not freed: $(df -k "$WORK/small")"
cmp "$WORK/toobig" "$WORK/f/mnt/toobig" || fail "the file whose copy failed"
wsfs_stop f "$WSFS_PID"

# ---- 4. --pool-share ----
for k in 1 2 3 4 5 6; do head -c 400000 /dev/urandom > "$WORK/s$k"; done
mkdir -p "$WORK/svol/sa" "$WORK/svol/sb"
WSFS_CONTENT=$C wsfs_start sa --state "$WORK/svol/sa" --pool-share=1000000
sa=$WSFS_PID
WSFS_CONTENT=$C wsfs_start sb --state "$WORK/svol/sb"
sb=$WSFS_PID
wait_for 10 eval '[ "$(stat_get sa scans)" -ge 1 ]' || fail "sa: no walk at start"
assert_eq 1000000 "$(stat_get sa pool_share)" "sa's pool_share in the stats"
grep -q '"pool_share":null' "$WORK/sb/stats.json" || fail "sb's pool_share is not unlimited: $(cat "$WORK/sb/stats.json")"
cp "$WORK/s1" "$WORK/sa/mnt/a1"; cp "$WORK/s2" "$WORK/sa/mnt/a2"
wait_for 20 stat_ge sa stubs_punched 2 || fail "sa: a1, a2 not stored: $(cat "$WORK/sa/stats.json")"
cp "$WORK/s3" "$WORK/sa/mnt/a3"
wait_for 20 stat_ge sa share_kept 1 || fail "sa: a3 not kept by the share: $(cat "$WORK/sa/stats.json")"
! is_stub "$WORK/svol/sa/a3" || fail "a3 became a stub over the share"
cmp "$WORK/s3" "$WORK/svol/sa/a3" || fail "a3 is not whole in the state dir"
assert_eq 800000 "$(stat_get sa pool_bytes)" "sa's pool_bytes"
# The other workspace still publishes, a copy of sa's content included
# (it counts for sb too).
for k in 3 4 5; do cp "$WORK/s$k" "$WORK/sb/mnt/b$k"; done
cp "$WORK/s1" "$WORK/sb/mnt/b1"
wait_for 20 stat_ge sb stubs_punched 4 || fail "sb did not publish: $(cat "$WORK/sb/stats.json")"
assert_eq 1600000 "$(stat_get sb pool_bytes)" "sb's pool_bytes (a deduplicated object counts for each workspace)"
assert_eq 1 "$(stat_get sb objects_deduplicated)" "sb deduplicated"
# Two stubs of one content in one workspace count once.
cp "$WORK/s4" "$WORK/sb/mnt/b4bis"
wait_for 20 stat_ge sb stubs_punched 5 || fail "sb: b4bis not stored"
assert_eq 1600000 "$(stat_get sb pool_bytes)" "sb's pool_bytes with two stubs of one object"
# Restart sa: the walk counts what its stubs reference.
wsfs_stop sa "$sa"
WSFS_CONTENT=$C wsfs_start sa --state "$WORK/svol/sa" --pool-share=1000000
sa=$WSFS_PID
wait_for 10 eval '[ "$(stat_get sa scans)" -ge 1 ]' || fail "sa: no walk after the restart"
assert_eq 800000 "$(stat_get sa pool_bytes)" "sa's pool_bytes after a restart"
assert_eq 2 "$(stat_get sa pool_objects)" "sa's pool_objects after a restart"
cp "$WORK/s6" "$WORK/sa/mnt/a6"
wait_for 20 stat_ge sa share_kept 1 || fail "sa: a6 not kept after the restart: $(cat "$WORK/sa/stats.json")"
# A deletion: the next store over the bound asks for a recount (at most
# one per 5 s); the one after it fits.
rm "$WORK/sa/mnt/a1"
sleep 5
cp "$WORK/s4" "$WORK/sa/mnt/a4"
wait_for 20 stat_ge sa share_kept 2 || fail "sa: a4 not kept: $(cat "$WORK/sa/stats.json")"
wait_for 20 eval '[ "$(stat_get sa scans)" -ge 2 ]' || fail "sa: no recount after a deletion over the bound: $(cat "$WORK/sa/stats.json")"
assert_eq 400000 "$(stat_get sa pool_bytes)" "sa's pool_bytes after the recount"
cp "$WORK/s5" "$WORK/sa/mnt/a5"
wait_for 20 eval 'is_stub "$WORK/svol/sa/a5"' || fail "sa: a5 not stored once the share had room: $(cat "$WORK/sa/stats.json")"
for f in a2:s2 a3:s3 a4:s4 a5:s5 a6:s6; do cmp "$WORK/${f#*:}" "$WORK/sa/mnt/${f%%:*}" || fail "sa: ${f%%:*} read back"; done
for f in b1:s1 b3:s3 b4:s4 b5:s5 b4bis:s4; do cmp "$WORK/${f#*:}" "$WORK/sb/mnt/${f%%:*}" || fail "sb: ${f%%:*} read back"; done
wsfs_stop sa "$sa"
wsfs_stop sb "$sb"
log "ok"
