#!/usr/bin/env bash
# kill -9 a daemon while the agent is down, then start the agent: that
# workspace's dead mount is cleaned and it is restarted (restarts = 1, its
# files still there), the others are re-adopted. A stray dead FUSE mount
# below the mount root that no workspace owns is swept.
. "$LAYOUTD_TESTS/supervise/lib.sh"
N=4
gen_config $N
start_harness
wait_for 20 all_running || fail "not all running"
for i in $(seq 1 $N); do echo "v$i" >"$WORK/mnt/ws$i/f"; done
before=$(jq -c '[.workspaces | to_entries[] | {(.key): .value.pid}] | add' "$STATUS")
kill -KILL "$HPID"
wait "$HPID" 2>/dev/null || true
HPID=
kill -KILL "$(jq -r .ws3 <<<"$before")"
# A stray: a FUSE daemon below the mount root that no workspace knows.
mkdir -p "$WORK/mnt/stray" "$WORK/state/stray"
"$TESTFS" --state "$WORK/state/stray" "$WORK/mnt/stray" 2>/dev/null &
stray=$!
wait_for 5 sh -c "[ \"\$(awk -v t='$WORK/mnt/stray' '\$5 == t' /proc/self/mountinfo)\" ]" || fail "stray did not mount"
kill -KILL $stray
wait $stray 2>/dev/null || true
assert_eq 1 "$(fuse_mounts_at "$WORK/mnt/ws3")" "ws3 dead mount still there"
start_harness
wait_for 20 all_running || fail "not all running after restart: $(cat "$STATUS")"
assert_eq 1 "$(st ws3 restarts)" "ws3 restarts"
assert_eq false "$(st ws3 adopted)" "ws3 not adopted"
[ "$(st ws3 pid)" != "$(jq -r .ws3 <<<"$before")" ] || fail "ws3 same pid"
assert_eq 1 "$(fuse_mounts_at "$WORK/mnt/ws3")" "ws3 exactly one mount"
assert_eq v3 "$(cat "$WORK/mnt/ws3/f")" "ws3 file"
for i in 1 2 4; do
    assert_eq "$(jq -r ".ws$i" <<<"$before")" "$(st ws$i pid)" "ws$i re-adopted pid"
    assert_eq true "$(st ws$i adopted)" "ws$i adopted"
    assert_eq 0 "$(st ws$i restarts)" "ws$i restarts"
done
assert_eq 0 "$(fuse_mounts_at "$WORK/mnt/stray")" "stray mount swept"
grep -q "removed stale FUSE mount $WORK/mnt/stray" "$HLOG" || fail "sweep not logged"
grep -q "no FUSE mount at" "$HLOG" && fail "unexpected readiness timeout: $(grep "no FUSE mount" "$HLOG")"
log "ok"
