#!/usr/bin/env bash
# A full volume that recovers does not crash the agent (issue "Nothing
# lost, nothing crashed", defect 5): a 256 MiB loop-ext4 state volume
# without growth, a 2 s flush probe; a workspace writes 400 MB (ENOSPC),
# removes it, and the health goes degraded -> ok. The agent once aborted
# right there (sd-event: a running child's reaper source freed from its
# own callback): 30 s after the last volume left its threshold, the
# capacity watch worker, still running, was freed. Two rounds.
TEST_NAME=agent-recover
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/agent/lib-agent.sh"
require_root; require_loop; require_fuse; require_cmd curl; require_cmd mkfs.ext4
[ -x "$PY" ] || skip "needs /usr/bin/python3"

L=$WORK/layout.yaml
cat >"$L" <<YAML
version: 1
root: $WORK/root
pools:
  state:
    backend: loop-ext4
    volume_size: 256MiB
    max_volumes: 2
    workspaces_per_volume: 3
    workspace_reserve: 4MiB
  content:
    backend: loop-ext4
    volume_size: 128MiB
    gc: false
workspace:
  mount_root: $WORK/mnt
  command: [$WSFS, --cas-threshold=0, --state, "{state_dir}", --content, "{content_dirs}", "{mountpoint}"]
  restart: on-failure
  stop_timeout: 5s
api:
  socket: $SOCK
  group: layoutd-no-such-group
  flush_probe_interval: 2s
YAML
# Debug: the test waits on the watch's own "stopped" line, not on a clock.
start_agent "$L" --log-level debug
"$LAYOUTCTL" --socket "$SOCK" add r1 >/dev/null || fail "add r1"
m=$WORK/mnt/r1
health() { jget "$(api GET /v1/volumes/state-0)" "d['health']"; }
health_is() { [ "$(health)" = "$1" ]; }
alive() { kill -0 "$AGENT_PID" 2>/dev/null || { tail -30 "$AGENT_LOG"; fail "the agent died ($1)"; }; }

for round in 1 2; do
    if dd if=/dev/zero of="$m/big" bs=1M count=400 conv=fsync status=none 2>"$WORK/dd.err"; then
        fail "round $round: 400 MB fit in a 256 MiB volume"
    fi
    grep -q "No space left on device" "$WORK/dd.err" || fail "round $round: the writer's error is not ENOSPC: $(cat "$WORK/dd.err")"
    wait_for 10 health_is degraded || fail "round $round: not degraded when full: $(health)"
    alive "full, round $round"
    stops=$(grep -c 'capacity watch: stopped' "$AGENT_LOG" || true)
    rm -f "$m/big"
    sync -f "$m" 2>/dev/null || true # reports the earlier ENOSPC once
    wait_for 20 health_is ok || fail "round $round: not ok after emptying: $(health)"
    # The watch lingers 30 s once nothing is near a threshold, then its
    # worker is freed while it runs: that is where it aborted. Its stop is
    # logged (debug); a second later the agent must still be there.
    stopped() { [ "$(grep -c 'capacity watch: stopped' "$AGENT_LOG" || true)" -gt "$stops" ]; }
    wait_for 60 stopped || { alive "waiting for the watch to stop, round $round"; fail "round $round: the capacity watch never stopped"; }
    sleep 1
    alive "recovered, round $round"
    log "round $round: full -> degraded -> ok, agent alive"
done
grep -q "Assertion" "$AGENT_LOG" && fail "an assertion in the agent's log: $(grep Assertion "$AGENT_LOG")"
assert_eq 200 "$(api GET /v1/health >/dev/null; st)" "/v1/health after recovery"
stop_agent
log "PASS"
