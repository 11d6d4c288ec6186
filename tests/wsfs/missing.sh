#!/usr/bin/env bash
# A stub whose object is missing reads as an error (EIO), never as zeros,
# and keeps its reference (issue 19, defect 1), on loop-backed ext4
# volumes as layoutd carves them:
#   1. the issue's repro: a 100,000-byte and a 1 MiB random file go to the
#      pool and are punched (the 100,000-byte stub keeps its partial last
#      block, st_blocks 8: what fooled the old daemon); the objects are
#      moved away; a new daemon's walk reports both missing before any
#      read; reads give EIO (the old daemon gave the zero hash and removed
#      the xattr), the xattrs stay, each missing object is logged once and
#      listed in the stats; `fsck` lists both; restoring the objects makes
#      the files readable again, with the right sha256, without a restart;
#   2. the fallback is only for stubs known to be whole: a stub with the
#      marker whose data hashes to its digest is served and becomes
#      ordinary; one of an older daemon (no marker) or with data that
#      does not hash to the digest gives EIO and keeps its reference;
#   3. a missing stub can still be overwritten (O_TRUNC) or removed;
#   4. fsck: exit status and JSON, a stub whose object is in the trash,
#      and the pool lock: with a candidate it waits for a sweeper that
#      holds the lock exclusively (and gives up after --lock-timeout);
#   5. a lost pool is not a log line per file: 200 stubs without their
#      objects are all counted, the first 64 named, the rest summed up.
TEST_NAME=wsfs-missing
: "${LAYOUTD_TESTS:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/wsfs/lib.sh"
require_cmd getfattr
require_cmd setfattr
require_cmd jq

wsfs_mkvol svol 256M ext4
wsfs_mkvol cvol 256M ext4
S=$WORK/svol/r1
C=$WORK/cvol
mkdir -p "$S"
FSCK=("$WSFS" fsck --content "$C" --state-root "$S" --json)
ZERO100K=$(head -c 100000 /dev/zero | sha256sum | cut -d' ' -f1)
xattr() { getfattr --absolute-names --only-values -n "$2" "$1" 2>/dev/null; }
stat_ge() { [ "$(stat_get "$1" "$2")" -ge "$3" ]; }
# fsck_run: runs fsck, sets FSCK_RC and FSCK_OUT.
fsck_run() { FSCK_RC=0; FSCK_OUT=$("${FSCK[@]}" "$@" 2>"$WORK/fsck.err") || FSCK_RC=$?; }
# read_err FILE: sha256sum's result, or its error.
read_err() { local out; if out=$(sha256sum "$1" 2>&1); then echo "${out%% *}"; else echo "$out"; fi; }

# ---- 1. the repro ----
head -c 100000 /dev/urandom > "$WORK/f100k"
head -c $((1024 * 1024)) /dev/urandom > "$WORK/f1m"
sum100k=$(sha256sum < "$WORK/f100k" | cut -d' ' -f1)
sum1m=$(sha256sum < "$WORK/f1m" | cut -d' ' -f1)
WSFS_CONTENT=$C wsfs_start r1 --state "$S" --commit=fdatasync
cp "$WORK/f100k" "$WORK/f1m" "$WORK/r1/mnt/"
echo small > "$WORK/r1/mnt/small"
sync -f "$WORK/r1/mnt"
wait_for 20 stat_ge r1 stubs_punched 2 || fail "not stored and punched: $(cat "$WORK/r1/stats.json")"
wait_for 20 all_committed r1 || fail "not committed"
h100k=$(xattr "$S/f100k" user.wsfs.cas); h1m=$(xattr "$S/f1m" user.wsfs.cas)
assert_eq "$sum100k" "$h100k" "the 100,000-byte file's digest"
assert_eq "$sum1m" "$h1m" "the 1 MiB file's digest"
# The premise of the defect: the punched 100,000-byte stub keeps its last,
# partial block (the old daemon took st_blocks > 0 for "never punched").
blocks=$(stat -c %b "$S/f100k")
log "punched stubs: f100k $blocks blocks, f1m $(stat -c %b "$S/f1m") blocks"
[ "$blocks" -gt 0 ] || fail "premise: the punched 100,000-byte stub has no block left on ext4"
! xattr "$S/f100k" user.wsfs.whole >/dev/null || fail "a punched stub still carries user.wsfs.whole"
fsck_run
log "fsck, pool intact: $FSCK_OUT"
assert_eq 0 "$FSCK_RC" "fsck exit status with every object there"
assert_eq 2 "$(jq .stubs_checked <<< "$FSCK_OUT")" "fsck stubs_checked"
assert_eq 0 "$(jq .stubs_missing <<< "$FSCK_OUT")" "fsck stubs_missing"
wsfs_stop r1 "$WSFS_PID"

# The pool loses both objects (as a content volume carved anew would).
mkdir -p "$WORK/aside"
mv "$C/objects/${h100k:0:2}/$h100k" "$C/objects/${h1m:0:2}/$h1m" "$WORK/aside/"
fsck_run
log "fsck, objects gone: $FSCK_OUT"
assert_eq 1 "$FSCK_RC" "fsck exit status with objects missing"
assert_eq 2 "$(jq .stubs_missing <<< "$FSCK_OUT")" "fsck stubs_missing"
assert_eq 2 "$(jq .objects_missing <<< "$FSCK_OUT")" "fsck objects_missing"
assert_eq 2 "$(jq .missing_punched <<< "$FSCK_OUT")" "fsck missing_punched"
assert_eq "$h100k punched 100000 $S/f100k" \
    "$(jq -r '.missing[] | select(.digest == "'"$h100k"'") | "\(.digest) \(.own_data) \(.size) \(.path)"' <<< "$FSCK_OUT")" \
    "fsck's entry for f100k"
assert_eq "$h1m" "$(jq -r '.missing[] | select(.path == "'"$S/f1m"'") | .digest' <<< "$FSCK_OUT")" "fsck's entry for f1m"
"$WSFS" fsck --content "$C" --state-root "$S" > "$WORK/fsck.txt" || true
grep -q "^missing $h100k 100000 punched \"$S/f100k\"$" "$WORK/fsck.txt" || fail "fsck text output: $(cat "$WORK/fsck.txt")"

WSFS_CONTENT=$C wsfs_start r1 --state "$S" --commit=fdatasync
# The walk at start finds both before anything is read.
wait_for 20 eval '[ "$(stat_get r1 objects_missing)" = 2 ]' || fail "the start-up walk did not report 2 missing objects: $(cat "$WORK/r1/stats.json")"
assert_eq 0 "$(stat_get r1 missing_eio)" "EIO answers before any read"
for h in "$h100k" "$h1m"; do
    jq -e --arg h "$h" '.missing_objects | index($h)' "$WORK/r1/stats.json" >/dev/null || fail "$h not in missing_objects: $(cat "$WORK/r1/stats.json")"
done
for k in 1 2; do
    got=$(read_err "$WORK/r1/mnt/f100k")
    [ "$got" != "$ZERO100K" ] || fail "the 100,000-byte file reads as zeros"
    [ "$got" != "$sum100k" ] || fail "f100k read back without its object"
    grep -q "Input/output error" <<< "$got" || fail "f100k: expected EIO, got '$got'"
    got=$(read_err "$WORK/r1/mnt/f1m")
    grep -q "Input/output error" <<< "$got" || fail "f1m: expected EIO, got '$got'"
done
# Writing needs the data too: EIO, nothing changed.
! printf 'x' | dd of="$WORK/r1/mnt/f1m" bs=1 seek=10 conv=notrunc status=none 2>/dev/null || fail "a write into a stub without its object succeeded"
assert_eq "$h100k" "$(xattr "$S/f100k" user.wsfs.cas)" "f100k's reference after the reads"
assert_eq "$h1m" "$(xattr "$S/f1m" user.wsfs.cas)" "f1m's reference after the reads"
assert_eq small "$(cat "$WORK/r1/mnt/small")" "an ordinary file"
kill -USR1 "$WSFS_PID"
wait_for 10 stat_ge r1 missing_eio 5 || fail "EIO answers not counted: $(cat "$WORK/r1/stats.json")"
assert_eq 2 "$(stat_get r1 objects_missing)" "objects_missing (distinct) after repeated reads"
for h in "$h100k" "$h1m"; do
    assert_eq 1 "$(grep -c "object $h .*missing" "$WORK/r1/log")" "log lines about $h"
done
grep -q "object $h100k of $S/f100k is missing" "$WORK/r1/log" || fail "the log does not name the file: $(cat "$WORK/r1/log")"
# The objects come back: readable again, same daemon, right content.
mv "$WORK/aside/$h100k" "$C/objects/${h100k:0:2}/"
mv "$WORK/aside/$h1m" "$C/objects/${h1m:0:2}/"
assert_eq "$sum100k" "$(read_err "$WORK/r1/mnt/f100k")" "f100k after its object came back"
assert_eq "$sum1m" "$(read_err "$WORK/r1/mnt/f1m")" "f1m after its object came back"
fsck_run
assert_eq 0 "$FSCK_RC" "fsck exit status once the objects are back"
wsfs_stop r1 "$WSFS_PID"

# ---- 2. stubs whose own data may serve: only with the marker and the hash ----
head -c 200000 /dev/urandom > "$WORK/own"
hown=$(sha256sum < "$WORK/own" | cut -d' ' -f1)
mkdir -p "$S/crash"
# a crash before the object was durable: whole data, marker, reference
cp "$WORK/own" "$S/crash/whole"
setfattr -n user.wsfs.whole -v 1 "$S/crash/whole"
setfattr -n user.wsfs.cas -v "$hown" "$S/crash/whole"
# an older daemon's stub, never punched: whole data, no marker
cp "$WORK/own" "$S/crash/old"
setfattr -n user.wsfs.cas -v "$hown" "$S/crash/old"
# the marker, but data that is not the object's
head -c 200000 /dev/urandom > "$S/crash/liar"
setfattr -n user.wsfs.whole -v 1 "$S/crash/liar"
setfattr -n user.wsfs.cas -v "$hown" "$S/crash/liar"
fsck_run
log "fsck, crash cases: $FSCK_OUT"
assert_eq 1 "$FSCK_RC" "fsck exit status"
assert_eq whole "$(jq -r '.missing[] | select(.path == "'"$S/crash/whole"'") | .own_data' <<< "$FSCK_OUT")" "fsck: whole"
assert_eq unknown "$(jq -r '.missing[] | select(.path == "'"$S/crash/old"'") | .own_data' <<< "$FSCK_OUT")" "fsck: an older daemon's stub"
assert_eq 3 "$(jq .stubs_missing <<< "$FSCK_OUT")" "fsck stubs_missing"
assert_eq 1 "$(jq .objects_missing <<< "$FSCK_OUT")" "fsck objects_missing (one digest)"

WSFS_CONTENT=$C wsfs_start r1 --state "$S"
wait_for 20 eval '[ "$(stat_get r1 objects_missing)" = 1 ]' || fail "the walk: the stub without the marker is not missing: $(cat "$WORK/r1/stats.json")"
assert_eq "$hown" "$(read_err "$WORK/r1/mnt/crash/whole")" "a whole stub without its object"
! xattr "$S/crash/whole" user.wsfs.cas >/dev/null || fail "the recovered stub kept its reference"
! xattr "$S/crash/whole" user.wsfs.whole >/dev/null || fail "the recovered stub kept its marker"
grep -q "Input/output error" <<< "$(read_err "$WORK/r1/mnt/crash/old")" || fail "an older daemon's stub without its object did not give EIO"
grep -q "Input/output error" <<< "$(read_err "$WORK/r1/mnt/crash/liar")" || fail "a stub whose data does not hash to its digest did not give EIO"
grep -q "Input/output error" <<< "$(read_err "$WORK/r1/mnt/crash/liar")" || fail "liar, second read"
assert_eq "$hown" "$(xattr "$S/crash/old" user.wsfs.cas)" "the older daemon's stub keeps its reference"
assert_eq "$hown" "$(xattr "$S/crash/liar" user.wsfs.cas)" "the liar keeps its reference"
kill -USR1 "$WSFS_PID"
wait_for 10 stat_ge r1 missing_eio 3 || fail "EIO answers: $(cat "$WORK/r1/stats.json")"
assert_eq 1 "$(stat_get r1 stubs_recovered)" "stubs_recovered"
assert_eq 1 "$(grep -c 'does not hash to' "$WORK/r1/log")" "the liar is hashed (and logged) once"

# ---- 3. a stub without its object can be overwritten, or removed ----
printf 'new content\n' > "$WORK/r1/mnt/crash/old"
assert_eq "new content" "$(cat "$WORK/r1/mnt/crash/old")" "O_TRUNC over a stub without its object"
! xattr "$S/crash/old" user.wsfs.cas >/dev/null || fail "the overwritten file is still a stub"
rm "$WORK/r1/mnt/crash/liar"
wait_for 20 all_committed r1 || fail "not committed"
fsck_run
assert_eq 0 "$FSCK_RC" "fsck once the broken stubs are gone: $FSCK_OUT"
wsfs_stop r1 "$WSFS_PID"

# ---- 4. fsck: the trash, usage, the lock ----
mkdir -p "$C/trash"
mv "$C/objects/${h1m:0:2}/$h1m" "$C/trash/$h1m"
fsck_run
assert_eq 0 "$FSCK_RC" "fsck with an object in the trash (not missing): $FSCK_OUT"
assert_eq 1 "$(jq .in_trash <<< "$FSCK_OUT")" "fsck in_trash"
mv "$C/trash/$h1m" "$C/objects/${h1m:0:2}/$h1m"
rc=0; "$WSFS" fsck --content "$C" >/dev/null 2>&1 || rc=$?
assert_eq 2 "$rc" "fsck without --state-root"
rc=0; "$WSFS" fsck --content "$C" --state-root "$WORK/nope" >/dev/null 2>&1 || rc=$?
assert_eq 2 "$rc" "fsck with a state root that does not exist"
rc=0; "$WSFS" fsck --content "$WORK/aside" --state-root "$S" >/dev/null 2>&1 || rc=$?
assert_eq 2 "$rc" "fsck with a dir that is no pool"
[ ! -e "$WORK/aside/objects" ] || fail "fsck made objects/ in a dir that is no pool"

# The lock: a sweeper holds it exclusively (its test hook stops it there,
# after one quarantine). fsck of a tree whose objects are all there needs
# no lock; with a candidate, it waits for the lock and gives up after
# --lock-timeout (exit 3, incomplete), and once the sweeper is gone the
# same check completes.
mkdir -p "$WORK/g/state"
head -c 70000 /dev/urandom > "$WORK/g/state/garbage"
WSFS_CONTENT=$C wsfs_start g --cas-threshold=4K
cp "$WORK/g/state/garbage" "$WORK/g/mnt/g2"
wait_for 20 stat_ge g stubs_punched 1 || fail "g2 not stored"
rm "$WORK/g/mnt/g2"
wait_for 20 all_committed g || fail "not committed"
wsfs_stop g "$WSFS_PID"
find "$C/objects" -mindepth 2 -type f -exec touch -h -m -d '3 hours ago' {} +
LAYOUTD_WSFS_GC_TEST_STOP_AFTER=1 "$WSFS" gc --content "$C" --state-root "$S" --state-root "$WORK/g/state" --json \
    > "$WORK/gc.out" 2> "$WORK/gc.err" &
gcpid=$!
track_pid "$gcpid"
wait_for 20 grep -q "test hook: stopped" "$WORK/gc.err" || fail "the sweeper did not stop at its hook: $(cat "$WORK/gc.err")"
fsck_run --lock-timeout 1s
assert_eq 0 "$FSCK_RC" "fsck with nothing missing while gc holds the lock: $FSCK_OUT"
mv "$C/objects/${h100k:0:2}/$h100k" "$WORK/aside/"
t0=$SECONDS
fsck_run --lock-timeout 2s
log "fsck with a candidate while gc holds the lock: rc $FSCK_RC after $((SECONDS - t0)) s: $FSCK_OUT $(cat "$WORK/fsck.err")"
assert_eq 3 "$FSCK_RC" "fsck exit status when the lock cannot be had"
assert_eq false "$(jq .ok <<< "$FSCK_OUT")" "fsck ok"
jq -e '.error | test("stayed locked")' <<< "$FSCK_OUT" >/dev/null || fail "fsck error: $FSCK_OUT"
[ $((SECONDS - t0)) -ge 2 ] || fail "fsck did not wait for the lock"
kill -KILL "$gcpid"; wait "$gcpid" 2>/dev/null || true
fsck_run --lock-timeout 2s
assert_eq 1 "$FSCK_RC" "fsck once the sweeper is gone: $FSCK_OUT"
assert_eq "$h100k" "$(jq -r '.missing[0].digest' <<< "$FSCK_OUT")" "the missing object"
mv "$WORK/aside/$h100k" "$C/objects/${h100k:0:2}/"

# ---- 5. many missing objects ----
mkdir -p "$WORK/many/state/lost"
/usr/bin/python3 - "$WORK/many/state/lost" <<'PY'
import hashlib, os, sys
for i in range(200):
    p = os.path.join(sys.argv[1], "f%03d" % i)
    with open(p, "wb") as f:
        f.truncate(100000)  # punched: no marker, no data
    os.setxattr(p, "user.wsfs.cas", hashlib.sha256(b"lost %d" % i).hexdigest().encode())
PY
WSFS_CONTENT=$C wsfs_start many
wait_for 20 eval '[ "$(stat_get many objects_missing)" = 200 ]' || fail "200 missing objects not counted: $(cat "$WORK/many/stats.json")"
assert_eq 16 "$(jq '.missing_objects | length' "$WORK/many/stats.json")" "digests listed in the stats"
assert_eq 64 "$(grep -c 'is missing from the content pool' "$WORK/many/log")" "missing objects named in the log"
grep -q '136 more objects missing from the content pool, not named here (200 in all' "$WORK/many/log" ||
    fail "no summary line for the rest: $(tail -3 "$WORK/many/log")"
assert_eq 1 "$(grep -c 'more objects missing' "$WORK/many/log")" "summary lines"
wsfs_stop many "$WSFS_PID"
fsck_run --state-root "$WORK/many/state"
assert_eq 1 "$FSCK_RC" "fsck exit status"
assert_eq 200 "$(jq .stubs_missing <<< "$FSCK_OUT")" "fsck lists them all"
log "ok"
