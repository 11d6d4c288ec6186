#!/usr/bin/env bash
# Stopping the agent (SIGTERM) stops every workspace in parallel: a daemon
# that ignores SIGTERM gets SIGKILL after stop_timeout; afterwards no FUSE
# mount and no daemon process is left, and the record says no daemon runs.
. "$LAYOUTD_TESTS/supervise/lib.sh"
gen_config 4 '{"stop_timeout_ms": 500, "ready_timeout_ms": 60000}' \
    "4={\"command\": [\"$TESTFS\", \"--never-mount\", \"--ignore-term\", \"--state\", \"{state_dir}\", \"{mountpoint}\"]}"
start_harness
for i in 1 2 3; do wait_state ws$i running; done
wait_state ws4 starting
pids=$(jq -r '.workspaces[].pid' "$STATUS")
kill -TERM "$HPID"
wait "$HPID" || fail "harness exit status $?"
HPID=
grep -q "\[ws4\] ! daemon (pid [0-9]*) still running after SIGTERM, sending SIGKILL" "$HLOG" || fail "no SIGKILL escalation"
assert_eq 0 "$(fuse_mounts_below "$WORK/mnt")" "FUSE mounts left"
for p in $pids; do alive "$p" && fail "daemon $p still alive"; done
assert_eq "" "$(work_pids)" "processes left"
assert_eq "0 0 0 0" "$(jq -r '[.workspaces[].daemon.pid] | join(" ")' "$RECORD")" "recorded pids after stop"
for i in 1 2 3 4; do assert_eq stopped "$(st ws$i state)" "ws$i final state"; done
log "ok"
