#!/usr/bin/env bash
# The agent is not a single point of failure: SIGKILL it and start it again,
# and every FUSE daemon is re-adopted (same pids, no restart) while the
# mounts keep serving; a daemon killed while the agent is down is cleaned up
# and restarted, the others adopted; a second agent on the same root is
# refused; SIGUSR2 exits leaving the workspaces up, and so does SIGTERM by
# default (layoutctl shutdown --stop-workspaces and on_agent_stop: stop
# stop them); a reboot-like loss of
# mounts and loop devices is re-attached without mkfs.
TEST_NAME=agent-readopt
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/agent/lib-agent.sh"
require_root; require_loop; require_fuse; require_cmd curl
[ -x "$PY" ] || skip "needs /usr/bin/python3"

L=$WORK/layout.yaml
write_layout "$L" 1 4 2
start_agent "$L"
for i in 1 2 3 4; do api POST /v1/workspaces "{\"id\":\"w$i\"}" >/dev/null; assert_eq 201 "$(st)" "create w$i"; done
running() { [ "$(jget "$(api GET /v1/workspaces)" "sum(1 for x in d['workspaces'] if x['daemon']['state']=='running')")" = "$1" ]; }
wait_for 60 running 4 || fail "4 workspaces not running"
for i in 1 2 3 4; do echo "data-$i" >"$WORK/mnt/w$i/f"; done
pids() { jget "$(api GET /v1/workspaces)" "' '.join('%s=%s' % (x['id'], x['daemon']['pid']) for x in d['workspaces'])"; }
before=$(pids)

# A second agent on the same root is refused.
if "$LAYOUTD" --layout "$L" --socket "$WORK/other.sock" >"$WORK/second.log" 2>&1; then fail "second agent started"; fi
grep -q "is locked" "$WORK/second.log" || fail "second agent's refusal unclear: $(cat "$WORK/second.log")"

# SIGKILL the agent: mounts keep serving while it is gone.
kill -KILL "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null || true
for i in 1 2 3 4; do assert_eq "data-$i" "$(cat "$WORK/mnt/w$i/f")" "w$i serves while the agent is down"; done
# Kill one daemon while no agent watches: its mount goes dead.
w3pid=$(jget "$(cat "$WORK/root/layoutd-state.json")" "[x for x in d['workspaces'] if x['id']=='w3'][0]['daemon']['pid']")
kill -KILL "$w3pid"
start_agent "$L"
wait_for 60 running 4 || fail "not all running after restart"
after=$(pids)
for i in 1 2 4; do
    b=$(tr ' ' '\n' <<<"$before" | grep "^w$i="); a=$(tr ' ' '\n' <<<"$after" | grep "^w$i=")
    assert_eq "$b" "$a" "w$i re-adopted with the same pid"
    assert_eq True "$(jget "$(api GET /v1/workspaces/w$i)" "d['daemon']['adopted']")" "w$i marked adopted"
done
[ "$(tr ' ' '\n' <<<"$after" | grep '^w3=')" != "w3=$w3pid" ] || fail "w3 not restarted"
assert_eq data-3 "$(cat "$WORK/mnt/w3/f")" "w3's files after its restart"
assert_eq 0 "$(jget "$(api GET /v1/workspaces/w1)" "d['daemon']['restarts']")" "adopted daemon not restarted"

# SIGUSR2: exit leaving workspaces serving, then adopt again.
kill -USR2 "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null || true
assert_eq data-1 "$(cat "$WORK/mnt/w1/f")" "w1 serves after SIGUSR2"
start_agent "$L"
wait_for 60 running 4 || fail "not all running after SIGUSR2 restart"

# SIGTERM (systemctl stop / restart): by default the workspaces keep
# serving, and the next agent re-adopts them, pids unchanged.
pids() { jget "$(api GET /v1/workspaces)" "' '.join(sorted('%s=%s' % (w['id'], w['daemon']['pid']) for w in d['workspaces']))"; }
before=$(pids)
kill -TERM "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null || true
grep -q 'exiting, leaving 4 workspace(s) serving' "$AGENT_LOG" || fail "SIGTERM did not say it keeps the workspaces"
assert_eq data-2 "$(cat "$WORK/mnt/w2/f")" "w2 serves while no agent runs"
start_agent "$L"
wait_for 60 running 4 || fail "not all running after a SIGTERM restart"
assert_eq "$before" "$(pids)" "daemon pids across a SIGTERM restart"

# POST /v1/shutdown?stop_workspaces=true (layoutctl shutdown --stop-workspaces):
# every daemon stops, then the agent exits.
"$LAYOUTCTL" --socket "$SOCK" shutdown --stop-workspaces >"$WORK/shutdown.txt" || fail "shutdown: $(cat "$WORK/shutdown.txt")"
grep -q 'stopped, and its 4 workspace(s) with it' "$WORK/shutdown.txt" || fail "shutdown said: $(cat "$WORK/shutdown.txt")"
! kill -0 "$AGENT_PID" 2>/dev/null || fail "the agent still runs after shutdown"
wait "$AGENT_PID" 2>/dev/null || true
[ -z "$(findmnt -rn -o TARGET,FSTYPE | awk '$2 ~ /^fuse/' | grep "$WORK" || true)" ] || fail "FUSE mounts left after a stopping shutdown"
# (a stopped daemon may linger as a zombie of a parent that is gone: only
# a live one counts)
alive() { [ -e "/proc/$1/stat" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }
for p in $before; do ! alive "${p#*=}" || fail "daemon ${p%%=*} survived a stopping shutdown"; done
# ... and on_agent_stop: stop makes SIGTERM do the same.
sed -i 's/^  restart: on-failure$/  restart: on-failure\n  on_agent_stop: stop/' "$L"
start_agent "$L"
wait_for 60 running 4 || fail "not all running after a start"
kill -TERM "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null || true
[ -z "$(findmnt -rn -o TARGET,FSTYPE | awk '$2 ~ /^fuse/' | grep "$WORK" || true)" ] || fail "on_agent_stop: stop left FUSE mounts"
start_agent "$L"
wait_for 60 running 4 || fail "not all running after an on_agent_stop: stop restart"

# Stop everything, then simulate a reboot: unmount and detach the volumes
# by hand; the next start re-attaches them with the same UUIDs, no mkfs.
uuids() { jget "$(api GET /v1/volumes)" "' '.join(sorted(v['uuid'] for v in d['volumes']))"; }
u1=$(uuids)
stop_agent
for m in $(findmnt -rn -o TARGET | grep "^$WORK/root/volumes/" | sort -r); do umount "$m"; done
for l in $(losetup -n -O NAME,BACK-FILE | awk -v d="$WORK" 'index($2, d) == 1 {print $1}'); do losetup -d "$l"; done
formats=$(grep -c 'volume .*: format ' "$AGENT_LOG" || true)
start_agent "$L"
assert_eq "$u1" "$(uuids)" "same UUIDs after the reboot"
assert_eq "$formats" "$(grep -c 'volume .*: format ' "$AGENT_LOG" || true)" "no mkfs after the reboot"
grep -q 'volume state-0: attach' <(tail -n 40 "$AGENT_LOG") || fail "state-0 was not re-attached"
wait_for 60 running 4 || fail "workspaces not back after the reboot"
for i in 1 2 3 4; do assert_eq "data-$i" "$(cat "$WORK/mnt/w$i/f")" "w$i data after the reboot"; done
stop_agent
[ -z "$(findmnt -rn -o TARGET,FSTYPE | awk '$2 ~ /^fuse/' | grep "$WORK" || true)" ] || fail "FUSE mounts left"
log "OK"
