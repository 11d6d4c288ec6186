#!/usr/bin/env bash
# The operator's surface against the real agent:
#  - socket activation: the agent takes the listening socket systemd passes
#    (systemd-socket-activate plays systemd: it holds the socket and starts
#    the agent on the first connection), sets the layout's mode on it, and
#    no daemon it spawns inherits it;
#  - `layoutctl add` issued before the agent is ready waits for it;
#  - status and is-healthy exit codes; why's refusal (6) and its yes (0),
#    from the files (--layout) and from the agent (its placement route);
#    plan --detailed-exitcode (0 nothing to do, 2 changes) next to the agent;
#  - the lock error names the agent's pid;
#  - `layoutctl reload` (the unit's ExecReload=) fails on a refused layout;
#  - the record holds the real boot id (journalctl -b's), and a record of
#    an older layoutd (the id's hash only) is still re-adopted from.
TEST_NAME=agent-operator
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/agent/lib-agent.sh"
require_root; require_loop; require_fuse; require_cmd curl; require_cmd mkfs.ext4
require_cmd systemd-socket-activate
[ -x "$PY" ] || skip "needs /usr/bin/python3"
[ -x "$WSFS" ] || fail "reference daemon not built: $WSFS"
ctl() { "$LAYOUTCTL" --socket "$SOCK" "$@"; }

L=$WORK/layout.yaml
write_layout "$L" 1 2 2
# Mode 0640 in the layout: what the agent must set on the socket it is given.
sed -i 's|^  flush_probe_interval: 1s|  flush_probe_interval: 1s\n  socket_mode: "0640"|' "$L"
"$LAYOUTCTL" validate "$L" >/dev/null || fail "test layout invalid: $("$LAYOUTCTL" validate "$L" 2>&1)"

log "socket activation: systemd holds the socket, the first client starts the agent"
start_notify_listener
systemd-socket-activate -l "$SOCK" -E NOTIFY_SOCKET="$WORK/notify.sock" -E PATH \
    "$LAYOUTD" --layout "$L" --socket "$SOCK" >>"$AGENT_LOG" 2>&1 &
AGENT_PID=$!
track_pid "$AGENT_PID"
wait_for 10 test -S "$SOCK" || fail "systemd-socket-activate did not listen: $(cat "$AGENT_LOG")"
grep -q 'API listening' "$AGENT_LOG" && fail "the agent started before any client came"
# The client comes before the agent even runs: the connection waits in the
# backlog, the agent starts, answers 503 not_ready while its volumes are
# carved, and the change waits for it.
out=$(ctl add early 2>"$WORK/add.err") || fail "add before the agent was ready: $(cat "$WORK/add.err") $(tail -20 "$AGENT_LOG")"
grep -q '^Created workspace early on state-0' <<<"$out" || fail "add: $out"
grep -q 'API listening on .* (the socket systemd passed)' "$AGENT_LOG" || fail "the agent did not take the socket: $(grep API "$AGENT_LOG")"
assert_eq 640 "$(stat -c %a "$SOCK")" "the layout's socket_mode on the passed socket"
wait_for 60 ready_count_above 0 || fail "no READY=1"
running() { [ "$(jget "$(api GET /v1/workspaces)" "sum(1 for x in d['workspaces'] if x['daemon']['state']=='running')")" = "$1" ]; }
wait_for 60 running 1 || fail "early not running"
# No child holds the listening socket (systemd passes it without
# O_CLOEXEC): its inode is open in the agent only.
ino=$(stat -L -c %i /proc/"$AGENT_PID"/fd/3 2>/dev/null || true)
[ -n "$ino" ] || fail "the agent has no fd 3"
daemon=$(jget "$(api GET /v1/workspaces/early)" "d['daemon']['pid']")
for fd in /proc/"$daemon"/fd/*; do
    [ "$(stat -L -c %i "$fd" 2>/dev/null)" = "$ino" ] && [ "$(stat -L -c %F "$fd" 2>/dev/null)" = socket ] &&
        fail "the daemon (pid $daemon) inherited the listening socket as $fd"
done
grep -q "LISTEN_FDS" /proc/"$daemon"/environ && fail "the daemon was told LISTEN_FDS"

log "status and is-healthy exit 0 on a healthy agent"
ctl status >"$WORK/status" || fail "status exits $? on a healthy agent: $(cat "$WORK/status")"
ctl is-healthy || fail "is-healthy exits $?"

log "why: 0 when placeable, 6 when it would be refused"
"$LAYOUTCTL" why next --layout "$L" >"$WORK/why1" || fail "why of a placeable workspace exits $?: $(cat "$WORK/why1")"
api POST /v1/workspaces '{"id":"w2"}' >/dev/null; assert_eq 201 "$(st)" "create w2"
api POST /v1/workspaces '{"id":"w3"}' >/dev/null; assert_eq 201 "$(st)" "create w3"
api POST /v1/workspaces '{"id":"w4"}' >/dev/null; assert_eq 201 "$(st)" "create w4"
wait_for 60 running 4 || fail "4 workspaces not running"
rc=0; "$LAYOUTCTL" why w5 --layout "$L" >"$WORK/why2" || rc=$?
assert_eq 6 "$rc" "why of a workspace the full pool refuses"
grep -q max_volumes "$WORK/why2" || fail "why does not say why: $(cat "$WORK/why2")"
rc=0; "$LAYOUTCTL" why w5 --layout "$WORK/missing.yaml" 2>/dev/null || rc=$?
assert_eq 1 "$rc" "why with no layout (an error, not a refusal)"

log "why without --layout: the agent answers (GET /v1/workspaces/ID/placement)"
rc=0; ctl why w5 >"$WORK/why3" 2>"$WORK/why3.err" || rc=$?
assert_eq 6 "$rc" "the agent's why of a workspace the full pool refuses"
grep -q max_volumes "$WORK/why3" || fail "the agent's why does not say why: $(cat "$WORK/why3")"
[ -s "$WORK/why3.err" ] && fail "why said something on stderr with an agent: $(cat "$WORK/why3.err")"
body=$(api GET /v1/workspaces/w5/placement)
assert_eq 200 "$(st)" "GET placement"
assert_eq refuse "$(jget "$body" "d['action']")" "the placement's action"
assert_eq "$(cat "$WORK/why3")" "$(jget "$body" "d['why']")" "why prints the agent's words"
rc=0; ctl why w5 --json >"$WORK/why4" || rc=$?
assert_eq 6 "$rc" "why --json of a refusal"
assert_eq refuse "$(jget "$(cat "$WORK/why4")" "d['action']")" "why --json's action"
api GET "/v1/workspaces/w5/placement?tenant=Bad_Name" >/dev/null
assert_eq 400 "$(st)" "a placement asked for a bad tenant"
api GET "/v1/workspaces/w5/placement?wait=1" >/dev/null
assert_eq 400 "$(st)" "a placement asked with a query it does not take"
# No agent on that socket: said, then predicted from the layout's files.
rc=0; "$LAYOUTCTL" --socket "$WORK/nobody.sock" why w5 --layout "$L" >/dev/null 2>"$WORK/why5.err" || rc=$?
assert_eq 6 "$rc" "why predicted from the files"
rc=0; "$LAYOUTCTL" --socket "$WORK/nobody.sock" why w5 >/dev/null 2>"$WORK/why5.err" || rc=$?
grep -q "not running" "$WORK/why5.err" || fail "why without an agent does not say so: $(cat "$WORK/why5.err")"

log "plan --detailed-exitcode next to the agent (no lock): 0, then 2 for a change"
"$LAYOUTCTL" plan --layout "$L" --detailed-exitcode >"$WORK/plan1" || fail "plan of an applied layout exits $?: $(cat "$WORK/plan1")"
assert_eq "No changes." "$(cat "$WORK/plan1")" "plan of an applied layout"
sed 's/volume_size: 64MiB/volume_size: 80MiB/' "$L" >"$WORK/grown.yaml"
rc=0; "$LAYOUTCTL" plan --layout "$WORK/grown.yaml" --detailed-exitcode >"$WORK/plan2" || rc=$?
assert_eq 2 "$rc" "plan with a grow to do"
grep -q 'grow' "$WORK/plan2" || fail "plan2: $(cat "$WORK/plan2")"
rc=0; "$LAYOUTCTL" plan --layout "$L" --detailed-exitcode --bogus 2>/dev/null || rc=$?
assert_eq 1 "$rc" "a usage error is 1 under --detailed-exitcode (2 means changes)"

log "the lock error names the agent's pid"
rc=0; "$LAYOUTCTL" apply --layout "$L" >/dev/null 2>"$WORK/lock.err" || rc=$?
assert_eq 1 "$rc" "apply next to the agent"
grep -q "layoutd-state.lock is locked by layoutd (pid $AGENT_PID)" "$WORK/lock.err" || fail "lock error: $(cat "$WORK/lock.err")"
grep -q "systemctl stop layoutd" "$WORK/lock.err" || fail "lock error says nothing to do: $(cat "$WORK/lock.err")"
assert_eq "$AGENT_PID" "$(cat "$WORK/root/layoutd-state.lock")" "the lock file names its holder"

log "layoutctl reload (ExecReload=) fails on a refused layout, keeps the running one"
cp "$L" "$L.good"
printf 'version: 1\nroot: %s/root\npools:\n  state:\n    backend: loop-ext4\n    workspace_per_volume: 3\n' "$WORK" >"$L"
rc=0; ctl reload >/dev/null 2>"$WORK/reload.err" || rc=$?
assert_eq 1 "$rc" "reload of a broken layout"
grep -q "layout.yaml:6:5" "$WORK/reload.err" || fail "reload error lacks file:line:col: $(cat "$WORK/reload.err")"
rc=0; ctl status >/dev/null || rc=$?
assert_eq 5 "$rc" "status after a refused reload (degraded)"
rc=0; ctl is-healthy || rc=$?
assert_eq 5 "$rc" "is-healthy after a refused reload"
cp "$L.good" "$L"
ctl reload >/dev/null || fail "reload of the good layout"
ctl is-healthy || fail "is-healthy after a good reload exits $?"

log "the record holds this boot's id, as journalctl -b knows it"
rec=$WORK/root/layoutd-state.json
want=$(tr -d '-' </proc/sys/kernel/random/boot_id)
assert_eq "$want" "$(jget "$(cat "$rec")" "[w for w in d['workspaces'] if w['id']=='early'][0]['daemon']['boot_id']")" "boot_id"
jget "$(cat "$rec")" "[w for w in d['workspaces'] if w['id']=='early'][0]['daemon']['boot_id_hash']" | grep -Eq '^[1-9][0-9]*$' ||
    fail "no boot_id_hash for older agents"

log "a record of an older layoutd (the boot id's hash only) is re-adopted from"
pids() { jget "$(api GET /v1/workspaces)" "' '.join(sorted('%s=%s' % (w['id'], w['daemon']['pid']) for w in d['workspaces']))"; }
before=$(pids)
kill -USR2 "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null || true
AGENT_PID=
# Nothing holds the socket now: had a daemon inherited it, this would connect.
rc=0; "$LAYOUTCTL" --socket "$SOCK" status >/dev/null 2>&1 || rc=$?
assert_eq 3 "$rc" "nobody listens once the agent is gone"
"$PY" - "$rec" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for w in d["workspaces"]:
    w["daemon"].pop("boot_id", None)
json.dump(d, open(sys.argv[1], "w"))
PY
start_agent "$L"
wait_for 60 running 4 || fail "not all running after the restart"
assert_eq "$before" "$(pids)" "every daemon re-adopted from the old record (same pids)"
assert_eq True "$(jget "$(api GET /v1/workspaces/early)" "d['daemon']['adopted']")" "early marked adopted"

stop_agent
log "all operator checks passed"
