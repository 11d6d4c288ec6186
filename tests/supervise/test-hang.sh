#!/usr/bin/env bash
# A daemon whose requests never complete: fusectl "waiting" stays up for
# hang_timeout, the hang is reported, and with restart_on_hang the
# connection is aborted (the stuck caller gets an error instead of waiting
# forever) and the daemon restarted.
. "$LAYOUTD_TESTS/supervise/lib.sh"
gen_config 2 '{"hang_timeout_ms": 800}' \
    "2={\"restart_on_hang\": true, \"command\": [\"$TESTFS\", \"--hang\", \"--state\", \"{state_dir}\", \"{mountpoint}\"]}"
start_harness
wait_state ws1 running
wait_state ws2 running
first=$(st ws2 pid)
# A caller that gets stuck in the hung daemon.
stat "$WORK/mnt/ws2/x" >/dev/null 2>&1 &
caller=$!
track_pid $caller
wait_for 10 sh -c "[ \"\$(jq -r '.workspaces.ws2.hangs' '$STATUS')\" -ge 1 ]" || fail "hang not detected"
grep -q "\[ws2\] HANG: [1-9][0-9]* requests waiting" "$HLOG" || fail "on_hang not called"
# The stuck caller is released by the abort.
wait_for 5 sh -c "! kill -0 $caller 2>/dev/null" || fail "stuck caller not released"
wait_for 10 sh -c "[ \"\$(jq -r '.workspaces.ws2.restarts' '$STATUS')\" -ge 1 ] && [ \"\$(jq -r '.workspaces.ws2.state' '$STATUS')\" = running ]" ||
    fail "hung daemon not restarted"
alive "$first" && fail "hung daemon $first still alive"
assert_eq 1 "$(fuse_mounts_at "$WORK/mnt/ws2")" "ws2 one mount"
assert_eq 0 "$(st ws1 hangs)" "ws1 no hang (idle)"
assert_eq 0 "$(st ws1 restarts)" "ws1 restarts"
log "ok"
