#!/usr/bin/env bash
# kill -9 one daemon: its workspace is healthy again within the backoff, no
# stale mount is left, its restart counter is 1, its files are still there,
# and the other workspaces are untouched.
. "$LAYOUTD_TESTS/supervise/lib.sh"
N=8
gen_config $N
start_harness
wait_for 20 all_running || fail "not all running"
for i in $(seq 1 $N); do echo "data $i" >"$WORK/mnt/ws$i/f"; done
before=$(jq -c '[.workspaces[] | .pid]' "$STATUS")
victim=$(st ws3 pid)
kill -KILL "$victim"
wait_for 10 sh -c "[ \"\$(jq -r '.workspaces.ws3.pid' '$STATUS')\" != '$victim' ] && [ \"\$(jq -r '.workspaces.ws3.state' '$STATUS')\" = running ]" \
    || fail "ws3 not running again: $(st ws3 state); $(tail -n 20 "$HLOG")"
assert_eq 1 "$(st ws3 restarts)" "ws3 restarts"
assert_eq 9 "$(st ws3 exit_signal)" "ws3 last exit signal"
assert_eq 1 "$(st ws3 delays_ms | jq length)" "one backoff delay recorded"
d=$(st ws3 'delays_ms[0]')
[ "$d" -ge 100 ] && [ "$d" -le 120 ] || fail "first delay $d ms not in [100,120]"
assert_eq 1 "$(fuse_mounts_at "$WORK/mnt/ws3")" "ws3: exactly one (new) FUSE mount"
assert_eq "data 3" "$(cat "$WORK/mnt/ws3/f")" "ws3 file after restart"
for i in 1 2 4 5 6 7 8; do
    assert_eq "$(jq -r ".[$((i - 1))]" <<<"$before")" "$(st ws$i pid)" "ws$i pid unchanged"
    assert_eq 0 "$(st ws$i restarts)" "ws$i restarts"
done
grep -q "no FUSE mount at" "$HLOG" && fail "unexpected readiness timeout: $(grep "no FUSE mount" "$HLOG")"
log "ok"
