#!/usr/bin/env bash
# The agent's children die with it (issue "Nothing lost, nothing crashed",
# defect 8): SIGKILL the agent while a content sweep runs (a slow gc
# command) and while its capacity watch worker runs; neither outlives it
# as a zombie of PID 1 that the next agent cannot see, and the next agent
# sweeps again without a second sweeper beside it.
TEST_NAME=agent-children
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/agent/lib-agent.sh"
require_root; require_loop; require_fuse; require_cmd curl; require_cmd mkfs.xfs
[ -x "$PY" ] || skip "needs /usr/bin/python3"

# A sweeper that takes its time, and says who it is.
cat >"$WORK/slow-gc" <<SH
#!/bin/sh
echo \$\$ >>"$WORK/gc.pids"
exec sleep 300
SH
chmod +x "$WORK/slow-gc"
L=$WORK/layout.yaml
cat >"$L" <<YAML
version: 1
root: $WORK/root
pools:
  state:
    backend: loop-xfs
    volume_size: 320MiB
    max_volumes: 2
    growth: {threshold: 70%, step: double, max_size: 640MiB, host_reserve: 1GiB}
  content:
    backend: loop-xfs
    volume_size: 320MiB
    gc: {command: [$WORK/slow-gc], interval: 1h, grace: 1h}
workspace:
  mount_root: $WORK/mnt
  command: [$WSFS, --state, "{state_dir}", --content, "{content_dirs}", "{mountpoint}"]
api:
  socket: $SOCK
  group: layoutd-no-such-group
  flush_probe_interval: 2s
YAML
start_agent "$L"
workers() { pgrep -P "$AGENT_PID" -f -- '--worker' || true; }
# Conditions are functions: wait_for runs its arguments again each time,
# and a "$(...)" among them would be expanded once, before the first.
have_workers() { [ -n "$(workers)" ]; }
sweepers_started() { [ "$(wc -l <"$WORK/gc.pids")" -ge "$1" ]; }
wait_for 20 have_workers || fail "no watch worker runs beside a growth pool"
api POST /v1/gc '{}' >/dev/null
wait_for 10 test -s "$WORK/gc.pids" || fail "the sweep did not start: $(tail -5 "$AGENT_LOG")"
gc=$(tail -1 "$WORK/gc.pids")
w=$(workers)
log "sweeper $gc and worker(s) $w run; SIGKILL the agent ($AGENT_PID)"
kill -KILL "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null || true
gone() { for p in "$@"; do kill -0 "$p" 2>/dev/null && return 1; [ -e "/proc/$p" ] && return 1; done; return 0; }
wait_for 5 gone "$gc" || fail "the sweeper $gc outlived the agent: $(ps -o pid,ppid,stat,cmd -p "$gc" | tail -1)"
# shellcheck disable=SC2086
wait_for 5 gone $w || fail "worker(s) outlived the agent: $(ps -o pid,ppid,stat,cmd -p $w | tail -n +2)"
start_agent "$L"
out=$(api POST /v1/gc '{}')
wait_for 10 sweepers_started 2 ||
    fail "the next agent did not sweep (POST /v1/gc: $(st) $out): $(tail -20 "$AGENT_LOG")"
running=$(for p in $(cat "$WORK/gc.pids"); do kill -0 "$p" 2>/dev/null && echo "$p"; done | wc -l)
assert_eq 1 "$running" "sweepers running after the restart"
stop_agent
# killed at the stop (PR_SET_PDEATHSIG or the agent's own kill): gone
# within moments, as after the SIGKILL above, not at the same instant
# shellcheck disable=SC2046
wait_for 5 gone $(cat "$WORK/gc.pids") || fail "a sweeper outlived a clean stop"
log "PASS"
