#!/usr/bin/env bash
# SIGKILL during concurrent creates leaves an outcome a client can know
# (issue "Nothing lost, nothing crashed", defect 7): six creates at once,
# each of which needs a volume of its own (workspaces_per_volume: 1), and
# the agent killed -9 once the second new volume is formatted. Then:
#  - a workspace that was serving before the kill serves after it, with
#    the same files (never demoted to removed, never unmounted);
#  - every create whose intent reached the record completes after the
#    restart (GET /v1/workspaces/ID: running), the others are absent (404)
#    and left no directory anywhere;
#  - a volume carved for a create that died holds no workspace, and the
#    next start reclaims it (beyond min_volumes), saying so;
#  - every directory on every state volume has exactly one entry.
TEST_NAME=agent-creates-kill
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/agent/lib-agent.sh"
require_root; require_loop; require_fuse; require_cmd curl; require_cmd mkfs.ext4
[ -x "$PY" ] || skip "needs /usr/bin/python3"

L=$WORK/layout.yaml
write_layout "$L" 1 8 1
start_agent "$L"
"$LAYOUTCTL" --socket "$SOCK" add k0 >/dev/null || fail "add k0"
echo "serving before the kill" >"$WORK/mnt/k0/f"
sync
formatted() { jget "$(cat "$WORK/root/layoutd-state.json")" "sum(1 for v in d['volumes'] if v['formatted'])"; }
curl -s -N --unix-socket "$SOCK" "http://layoutd/v1/events" >"$WORK/events" 2>/dev/null &
events_pid=$!
clients=()
for i in 1 2 3 4 5 6; do
    curl -s --max-time 60 --unix-socket "$SOCK" -X POST -H 'Content-Type: application/json' \
        --data "{\"id\":\"k$i\"}" "http://layoutd/v1/workspaces?wait=60" >"$WORK/add-$i.out" 2>&1 &
    clients+=($!)
done
# Kill right after the second new volume is carved, while the other four
# carves (and the creates waiting on them) are still under way.
two_carved() { [ "$(grep -c '"volume.carved"' "$WORK/events")" -ge 2 ]; }
wait_for 60 two_carved || fail "no two volumes carved: $(cat "$WORK/events")"
kill -KILL "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null || true
kill "$events_pid" 2>/dev/null || true
wait "${clients[@]}" || true # the clients get whatever they get: no answer is a possible one
answered=$(cat "$WORK"/add-*.out | grep -c '"id"' || true)
log "killed after $(formatted) formatted volumes; $answered create(s) had an answer"
assert_eq "serving before the kill" "$(cat "$WORK/mnt/k0/f")" "k0 serves while no agent runs"
intents=$(jget "$(cat "$WORK/root/layoutd-state.json")" "' '.join(w['id'] for w in d['workspaces'])")
log "the record holds: $intents"

start_agent "$L"
state() { jget "$(api GET "/v1/workspaces/$1")" "d['daemon']['state']" 2>/dev/null; }
for i in 0 1 2 3 4 5 6; do
    id=k$i
    if grep -qw "$id" <<<"$intents"; then
        running_now() { [ "$(state "$1")" = running ]; }
        wait_for 60 running_now "$id" || fail "$id reached the record but is not running after the restart: $(api GET "/v1/workspaces/$id")"
    else
        api GET "/v1/workspaces/$id" >/dev/null
        assert_eq 404 "$(st)" "$id never reached the record: GET"
        compgen -G "$WORK/root/volumes/state-*/workspaces/$id" >/dev/null &&
            fail "$id left a directory without an entry"
    fi
done
assert_eq "serving before the kill" "$(cat "$WORK/mnt/k0/f")" "k0's file after the restart"
assert_eq True "$(jget "$(api GET /v1/workspaces/k0)" "d['active']")" "k0 still active"

# Every directory on every state volume has exactly one entry.
for d in "$WORK"/root/volumes/state-*/workspaces/*/; do
    [ -d "$d" ] || continue
    id=$(basename "$d")
    n=$(jget "$(cat "$WORK/root/layoutd-state.json")" "sum(1 for w in d['workspaces'] if w['id']=='$id')")
    assert_eq 1 "$n" "entries for the directory $d"
done

# Empty carved volumes: reclaimed by this start, and said.
empty=$(jget "$(cat "$WORK/root/layoutd-state.json")" \
    "' '.join(v['name'] for v in d['volumes'] if v['role']=='state' and v['index']>=1 and not any(w['volume']==v['name'] for w in d['workspaces']))")
reclaimed() { ! grep -q "reclaiming" "$AGENT_LOG" || grep -q "reclaimed:" "$AGENT_LOG"; }
wait_for 30 reclaimed || fail "a reclaim started but did not end: $(grep -i reclaim "$AGENT_LOG")"
if [ -n "$empty" ]; then fail "empty volumes left after the start: $empty"; fi
log "reclaimed: $(grep -o 'volume state-[0-9]*: reclaimed' "$AGENT_LOG" | tr '\n' ' ')"
stop_agent
log "PASS"
