#!/usr/bin/env bash
# A daemon that never mounts is killed (SIGKILL to its group) at the
# readiness timeout and counted as a failure: with a crash-loop limit of 2
# the second such death makes the workspace FAILED. Others are unaffected.
. "$LAYOUTD_TESTS/supervise/lib.sh"
gen_config 2 '{"ready_timeout_ms": 600, "crashloop_deaths": 2}' \
    "2={\"command\": [\"$TESTFS\", \"--never-mount\", \"--state\", \"{state_dir}\", \"{mountpoint}\"]}"
start_harness
wait_state ws1 running
wait_for 3 state_is ws2 starting || fail "ws2 not starting"
first=$(st ws2 pid)
alive "$first" || fail "ws2 daemon not alive while starting"
wait_state ws2 failed 15
alive "$first" && fail "the never-mounting daemon $first survived"
assert_eq 9 "$(st ws2 exit_signal)" "killed by SIGKILL"
assert_eq 1 "$(st ws2 delays_ms | jq length)" "one backoff between the two attempts"
assert_eq 1 "$(st ws2 restarts)" "ws2 restarts"
[ "$(grep -c '\[ws2\] ! no FUSE mount at' "$HLOG")" = 2 ] || fail "two readiness timeouts expected"
assert_eq 0 "$(fuse_mounts_at "$WORK/mnt/ws2")" "no mount at ws2"
assert_eq 0 "$(st ws1 restarts)" "ws1 restarts"
log "ok"
