#!/usr/bin/env bash
# SIGKILL the agent (harness) and start it again: every daemon is re-adopted
# with the same pid, none is restarted, and the mounts serve throughout
# (a reader keeps reading every mount while the agent is down and back).
. "$LAYOUTD_TESTS/supervise/lib.sh"
N=6
gen_config $N
start_harness
wait_for 20 all_running || fail "not all running"
for i in $(seq 1 $N); do echo "v$i" >"$WORK/mnt/ws$i/f"; done
# The environment each daemon was started with, from the supervisor's copy.
for i in $(seq 1 $N); do assert_eq "ws$i" "$(st ws$i env_workspace)" "ws$i started with its environment"; done
before=$(jq -c '[.workspaces | to_entries[] | {(.key): .value.pid}] | add' "$STATUS")

# A reader over all mounts, counting failures, until told to stop.
errs=$WORK/reader.errs
: >"$errs"
( while [ ! -e "$WORK/stop-reader" ]; do
      for i in $(seq 1 $N); do
          [ "$(cat "$WORK/mnt/ws$i/f" 2>/dev/null)" = "v$i" ] || echo "ws$i $(date +%s.%N)" >>"$errs"
      done
  done ) &
reader=$!
track_pid $reader

kill -KILL "$HPID"
wait "$HPID" 2>/dev/null || true
HPID=
sleep 0.5   # the mounts must keep serving while no agent runs
for i in $(seq 1 $N); do alive "$(jq -r ".ws$i" <<<"$before")" || fail "ws$i daemon died with the agent"; done
# The daemons log into FIFOs; with nobody reading they must not die or block.
start_harness
wait_for 20 all_running || fail "not all running after restart: $(cat "$STATUS")"
sleep 0.5
touch "$WORK/stop-reader"
wait $reader
assert_eq 0 "$(wc -l <"$errs")" "read failures while the agent restarted: $(head -3 "$errs")"
for i in $(seq 1 $N); do
    assert_eq "$(jq -r ".ws$i" <<<"$before")" "$(st ws$i pid)" "ws$i pid after re-adoption"
    assert_eq true "$(st ws$i adopted)" "ws$i adopted"
    assert_eq 0 "$(st ws$i restarts)" "ws$i restarts"
    assert_eq 1 "$(fuse_mounts_at "$WORK/mnt/ws$i")" "ws$i mounts"
    # Re-adopted: read from the daemon's /proc/<pid>/environ.
    assert_eq "ws$i" "$(st ws$i env_workspace)" "ws$i's environment after re-adoption"
done
grep -c "re-adopted daemon pid" "$HLOG" | grep -qx $N || fail "re-adoption not logged $N times"
# A re-adopted daemon is still supervised: kill it, it comes back.
victim=$(st ws2 pid)
kill -KILL "$victim"
wait_for 10 sh -c "[ \"\$(jq -r '.workspaces.ws2.pid' '$STATUS')\" != '$victim' ] && [ \"\$(jq -r '.workspaces.ws2.state' '$STATUS')\" = running ]" ||
    fail "killed adopted daemon not restarted"
assert_eq 1 "$(st ws2 restarts)" "ws2 restarts"
assert_eq ws2 "$(st ws2 env_workspace)" "ws2's environment after its restart"
assert_eq -1 "$(st ws2 exit_status)" "adopted daemon's status is unknown"
# And a clean stop after re-adoption leaves nothing.
kill -TERM "$HPID"
wait "$HPID" || fail "harness exit status"
HPID=
assert_eq 0 "$(fuse_mounts_below "$WORK/mnt")" "mounts after stop"
assert_eq "" "$(work_pids)" "processes after stop"
grep -q "no FUSE mount at" "$HLOG" && fail "unexpected readiness timeout: $(grep "no FUSE mount" "$HLOG")"
log "ok"
