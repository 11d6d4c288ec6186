#!/usr/bin/env bash
# `layoutd-wsfs gc`, the content pool's sweeper, against live writers:
#   1. six workspaces (six daemons, one shared pool) create, deduplicate,
#      copy up, rename (files and whole directories), link and delete in a
#      loop while gc runs every second with a 1 s grace period; at the end
#      every live file reads back byte-identical (after a restart, so from
#      the objects), and once the pool is quiet, every object nobody
#      references is gone and every one somebody references is there;
#   2. kill -9 of the sweeper mid-quarantine (a test hook stops it after K
#      objects, holding the lock): nothing live lost, the next run
#      finishes the job;
#   3. --dry-run deletes nothing and reports what the real run then does;
#   4. defence: a referenced object put in the trash by hand is restored,
#      by the daemon that opens it and by the next gc run;
#   5. a state root gc cannot read fails the run and deletes nothing.
# And `layoutd-wsfs fsck` runs beside the writers and the sweeper in (1):
# it must never report a stub without its object (nothing is lost there).
TEST_NAME=wsfs-gc
# Run by hand, find the tests dir from here (never run without common.sh).
: "${LAYOUTD_TESTS:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/wsfs/lib.sh"
require_cmd getfattr
require_cmd jq

SECONDS_RUN=${GC_TEST_SECONDS:-20}
C=$WORK/content
GC=("$WSFS" gc --content "$C" --json)
# objects_in DIR: digests of the objects in a pool dir, sorted.
objects_in() { find "$1/objects" -mindepth 2 -type f ! -name '.tmp.*' -printf '%f\n' | sort; }
# referenced STATE...: digests the stubs in these state dirs reference, sorted, unique.
referenced() {
    local d
    for d; do
        getfattr -R --absolute-names --only-values -n user.wsfs.cas "$d" 2>/dev/null | grep -Eo '[0-9a-f]{64}' || true
    done | sort -u
}
json_get() { sed -n "s/.*\"$1\":\([0-9a-z]*\).*/\1/p" <<< "$2"; }
age_objects() { find "$C/objects" -mindepth 2 -type f -exec touch -h -m -d '3 hours ago' {} +; }

# ---- 1. concurrency ----
roots=()
for k in 1 2 3 4 5 6; do
    wsfs_start "ws$k" --cas-threshold=4K --commit=fdatasync --batch-ms=20
    eval "pid$k=$WSFS_PID"
    roots+=(--state-root "$WORK/ws$k/state")
done
writers=()
for k in 1 2 3 4 5 6; do
    /usr/bin/python3 "$LAYOUTD_TESTS/wsfs/gcwriter.py" "$WORK/ws$k/mnt" "$SECONDS_RUN" "$k" "$WORK/manifest$k.json" \
        2> "$WORK/writer$k.err" &
    writers+=($!)
    track_pid "$!"
done
# The sweeper, every second, while the writers run.
( while :; do
      "${GC[@]}" "${roots[@]}" --grace 1s >> "$WORK/gc.jsonl" 2>> "$WORK/gc.err" || echo "exit $?" >> "$WORK/gc.err"
      sleep 1
  done ) &
sweeper=$!
track_pid "$sweeper"
( while :; do
      rc=0; "$WSFS" fsck --content "$C" "${roots[@]}" --json >> "$WORK/fsck.jsonl" 2>> "$WORK/fsck.err" || rc=$?
      echo "$rc" >> "$WORK/fsck.rc"
      sleep 0.5
  done ) &
checker=$!
track_pid "$checker"
for k in 1 2 3 4 5 6; do
    wait "${writers[$((k - 1))]}" || fail "writer $k failed: $(cat "$WORK/writer$k.err")"
done
kill "$sweeper" "$checker"; wait "$sweeper" "$checker" 2>/dev/null || true
fsck_runs=$(grep -c . "$WORK/fsck.rc" || true)
fsck_stubs=$(jq -s 'map(.stubs_checked) | add' "$WORK/fsck.jsonl")
fsck_rechecked=$(jq -s 'map(.rechecked) | add' "$WORK/fsck.jsonl")
log "fsck ran $fsck_runs times beside the writers and the sweeper, $fsck_stubs stubs checked, $fsck_rechecked looked at again under the lock"
[ "$fsck_runs" -ge $((SECONDS_RUN / 4)) ] || fail "fsck ran only $fsck_runs times"
[ "$fsck_stubs" -gt 0 ] || fail "fsck never saw a stub: it did not test"
[ -z "$(grep -v '^0$' "$WORK/fsck.rc")" ] || fail "fsck did not exit 0 beside live writers: $(sort "$WORK/fsck.rc" | uniq -c) $(grep -v '"stubs_missing":0,' "$WORK/fsck.jsonl" | head -2) $(head -3 "$WORK/fsck.err")"
runs=$(wc -l < "$WORK/gc.jsonl")
log "gc ran $runs times during the writes; $(grep -c '"ok":true' "$WORK/gc.jsonl") ok"
[ "$runs" -ge $((SECONDS_RUN / 4)) ] || fail "gc ran only $runs times"
[ ! -s "$WORK/gc.err" ] || fail "gc failed while the writers ran: $(head -5 "$WORK/gc.err")"
! grep -q '"ok":false' "$WORK/gc.jsonl" || fail "a gc run failed: $(grep '"ok":false' "$WORK/gc.jsonl" | head -1)"
sum_key() { sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p" "$WORK/gc.jsonl" | awk '{ s += $1 } END { print s + 0 }'; }
swept=$(sum_key objects_swept)
rescanned=$(sum_key dirs_rescanned)
log "swept $swept objects while the writers ran; $rescanned directory rereads under the lock"
[ "$swept" -gt 0 ] || fail "gc never swept anything while the writers ran: the test did not test"
! grep -q '"restored":[1-9]' "$WORK/gc.jsonl" || fail "gc had to restore referenced objects: the protocol leaked"
for k in 1 2 3 4 5 6; do
    wait_for 20 all_committed "ws$k" || fail "ws$k: not committed"
    log "ws$k writer ops: $(sed -n 's/.*"ops": \({[^}]*}\).*/\1/p' "$WORK/manifest$k.json")"
done
# Restart every daemon: no kernel cache left, stubs are read from objects.
for k in 1 2 3 4 5 6; do eval "wsfs_stop ws$k \$pid$k"; done
for k in 1 2 3 4 5 6; do wsfs_start "ws$k" --cas-threshold=4K; eval "pid$k=$WSFS_PID"; done
/usr/bin/python3 - "$WORK" <<'PY' || fail "a live file does not read back"
import hashlib, json, sys
work, bad, n = sys.argv[1], 0, 0
for k in range(1, 7):
    with open(f"{work}/manifest{k}.json") as f:
        files = json.load(f)["files"]
    for p, sha in files.items():
        n += 1
        try:
            with open(f"{work}/ws{k}/mnt/{p}", "rb") as f:
                got = hashlib.sha256(f.read()).hexdigest()
        except OSError as e:
            got = str(e)
        if got != sha:
            bad += 1
            print(f"ws{k}/{p}: {got} != {sha}", file=sys.stderr)
print(f"{n} live files, {bad} bad", file=sys.stderr)
sys.exit(1 if bad or n == 0 else 0)
PY
stubs=$(referenced "$WORK"/ws*/state | wc -l)
[ "$stubs" -gt 0 ] || fail "no stubs at the end: nothing was tested"
restored=0
for k in 1 2 3 4 5 6; do restored=$((restored + $(stat_get "ws$k" objects_restored))); done
assert_eq 0 "$restored" "objects the daemons had to restore from the trash"
# Quiet now: after the grace period, one more run leaves exactly the
# referenced objects.
sleep 2
out=$("${GC[@]}" "${roots[@]}" --grace 1s) || fail "final gc: $out"
log "final gc: $out"
diff <(objects_in "$C") <(referenced "$WORK"/ws*/state) > "$WORK/diff" ||
    fail "pool and references differ after the final gc (< unreferenced objects left, > referenced objects missing): $(head "$WORK/diff")"
[ -z "$(ls -A "$C/trash")" ] || fail "the trash is not empty"
for k in 1 2 3 4 5 6; do eval "wsfs_stop ws$k \$pid$k"; done

# ---- 2. kill -9 of the sweeper in the middle of its quarantine ----
C=$WORK/content2 GC=("$WSFS" gc --content "$WORK/content2" --json)
WSFS_CONTENT=$C wsfs_start kill --cas-threshold=4K --commit=fdatasync
m=$WORK/kill/mnt
for i in 1 2 3 4 5; do head -c $((10000 + i)) /dev/urandom > "$WORK/live$i"; cp "$WORK/live$i" "$m/live$i"; done
for i in 1 2 3 4 5 6; do head -c $((20000 + i)) /dev/urandom > "$m/garbage$i"; done
wait_for 20 eval '[ "$(stat_get kill stubs_punched)" -ge 11 ]' || fail "kill: files not stored: $(cat "$WORK/kill/stats.json")"
rm "$m"/garbage*
wait_for 20 all_committed kill || fail "kill: not committed"
age_objects
assert_eq 11 "$(objects_in "$C" | wc -l)" "objects before the sweep"
LAYOUTD_WSFS_GC_TEST_STOP_AFTER=3 "${GC[@]}" --state-root "$WORK/kill/state" > "$WORK/kill.out" 2> "$WORK/kill.err" &
gcpid=$!
track_pid "$gcpid"
wait_for 20 grep -q "test hook: stopped after quarantining 3" "$WORK/kill.err" || fail "the sweeper did not stop at the hook: $(cat "$WORK/kill.err")"
assert_eq 3 "$(ls "$C/trash" | wc -l)" "objects in the trash at the kill"
kill -KILL "$gcpid"; wait "$gcpid" 2>/dev/null || true
# Live files are whole (read through a fresh daemon, from the objects).
wsfs_stop kill "$WSFS_PID"
WSFS_CONTENT=$C wsfs_start kill --cas-threshold=4K
for i in 1 2 3 4 5; do cmp "$WORK/live$i" "$m/live$i" || fail "live$i after the sweeper was killed"; done
out=$("${GC[@]}" --state-root "$WORK/kill/state") || fail "gc after the kill: $out"
log "gc after the kill: $out"
assert_eq 6 "$(json_get objects_swept "$out")" "garbage swept by the next run (3 from the trash, 3 left)"
assert_eq 0 "$(json_get restored "$out")" "restored"
assert_eq 5 "$(objects_in "$C" | wc -l)" "objects left"
diff <(objects_in "$C") <(referenced "$WORK/kill/state") || fail "pool != references after the rerun"
[ -z "$(ls -A "$C/trash")" ] || fail "the trash is not empty after the rerun"
for i in 1 2 3 4 5; do cmp "$WORK/live$i" "$m/live$i" || fail "live$i after the rerun"; done

# ---- 3. --dry-run ----
for i in 1 2 3 4; do head -c $((30000 + i)) /dev/urandom > "$m/junk$i"; done
wait_for 20 eval '[ "$(stat_get kill stubs_punched)" -ge 4 ]' || fail "junk not stored"
rm "$m"/junk*
wait_for 20 all_committed kill || fail "not committed"
age_objects
before=$(objects_in "$C" | sha256sum)
dry=$("${GC[@]}" --state-root "$WORK/kill/state" --dry-run) || fail "dry run: $dry"
log "dry run: $dry"
assert_eq "$before" "$(objects_in "$C" | sha256sum)" "objects after --dry-run"
assert_eq true "$(json_get dry_run "$dry")" "dry_run in the output"
real=$("${GC[@]}" --state-root "$WORK/kill/state") || fail "real run: $real"
log "real run: $real"
assert_eq 4 "$(json_get objects_swept "$real")" "swept by the real run"
for key in objects_scanned objects_referenced objects_swept bytes_freed; do
    assert_eq "$(json_get $key "$real")" "$(json_get $key "$dry")" "$key: dry run vs real run"
done

# ---- 4. defence: a referenced object in the trash is put back ----
h=$(getfattr --absolute-names --only-values -n user.wsfs.cas "$WORK/kill/state/live1")
h2=$(getfattr --absolute-names --only-values -n user.wsfs.cas "$WORK/kill/state/live2")
wsfs_stop kill "$WSFS_PID"
mv "$C/objects/${h:0:2}/$h" "$C/trash/$h"
mv "$C/objects/${h2:0:2}/$h2" "$C/trash/$h2"
WSFS_CONTENT=$C wsfs_start kill --cas-threshold=4K
cmp "$WORK/live1" "$m/live1" || fail "a stub whose object was in the trash"
kill -USR1 "$WSFS_PID"
wait_for 10 eval '[ "$(stat_get kill objects_restored)" = 1 ]' || fail "the daemon did not count the restore"
[ -f "$C/objects/${h:0:2}/$h" ] || fail "the daemon did not put the object back"
out=$("${GC[@]}" --state-root "$WORK/kill/state") || fail "gc with a referenced object in the trash: $out"
assert_eq 1 "$(json_get restored "$out")" "gc restored the referenced object in the trash"
[ -f "$C/objects/${h2:0:2}/$h2" ] || fail "gc did not put the object back"
cmp "$WORK/live2" "$m/live2" || fail "live2 after gc restored its object"

# ---- 5. a state root that cannot be read: fail, delete nothing ----
head -c 12345 /dev/urandom > "$m/more"; wait_for 20 all_committed kill || fail "not committed"
rm "$m/more"; wait_for 20 all_committed kill || fail "not committed"
age_objects
before=$(objects_in "$C" | sha256sum)
rc=0; out=$("${GC[@]}" --state-root "$WORK/kill/state" --state-root "$WORK/no-such-root") || rc=$?
assert_eq 1 "$rc" "exit status with a missing state root"
assert_eq false "$(json_get ok "$out")" "ok with a missing state root"
assert_eq "$before" "$(objects_in "$C" | sha256sum)" "objects after a failed run"
rc=0; "$WSFS" gc --content "$C" >/dev/null 2>&1 || rc=$?
assert_eq 2 "$rc" "exit status without --state-root"
wsfs_stop kill "$WSFS_PID"
log "ok"
