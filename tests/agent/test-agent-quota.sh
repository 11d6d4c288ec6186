#!/usr/bin/env bash
# Quotas where the kernel cannot enforce them (this project's CI host: no
# CONFIG_XFS_QUOTA): /v1/status says so and why, a create or a change with
# a quota is refused with 501 and the reason, nothing is created half-way,
# and a workspace without a quota works as before, with a project id. The
# enforcing path (ENOSPC at the limit: XFS reports a project quota so;
# the neighbour writing on) is proven
# in the VM suite: tests/vm/guest/40-quota.sh.
TEST_NAME=agent-quota
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/agent/lib-agent.sh"
require_root; require_loop; require_fuse; require_cmd curl; require_cmd mkfs.xfs
[ -x "$PY" ] || skip "needs /usr/bin/python3"
[ -x "$WSFS" ] || fail "reference daemon not built: $WSFS"

L=$WORK/layout.yaml
write_layout "$L" 1 4 2
sed -i -e '0,/backend: loop-ext4/s//backend: loop-xfs/' -e '0,/volume_size: 64MiB/s//volume_size: 320MiB/' "$L"
start_agent "$L"
if [ -e /proc/fs/xfs/xqm ]; then
    skip "this kernel has XFS quota support: the refusal path cannot be shown here (the VM suite proves enforcement)"
fi

s=$(api GET /v1/status)
assert_eq False "$(jget "$s" "d['quotas']['supported']")" "quotas.supported on a kernel without XFS quota"
jget "$s" "d['quotas']['reason']" | has CONFIG_XFS_QUOTA || fail "quotas.reason does not name the cause: $s"
# No layout asked for quotas: a fresh carve's health does not warn about
# them (issue 39: it said `warning` after a carve, nothing after a restart).
quota_notes=$(jget "$s" "[p['message'] for p in d['problems'] if 'quota' in p['message']]")
assert_eq "[]" "$quota_notes" "problems about quotas on a fresh carve that asked for none"
assert_eq ok "$(jget "$(api GET /v1/volumes/state-0)" "d['health']")" "a freshly carved XFS state volume's health"

# The API: 501 with the reason; nothing is made.
out=$(api POST /v1/workspaces '{"id":"ws-q","quota":"32M"}')
assert_eq 501 "$(st)" "a create with a quota"
assert_eq not_supported "$(jget "$out" "d['error']['code']")" "its code"
jget "$out" "d['error']['message']" | has "cannot be enforced here" || fail "501 without the reason: $out"
api GET /v1/workspaces/ws-q >/dev/null; assert_eq 404 "$(st)" "the refused create left a workspace"
[ ! -e "$WORK/root/volumes/state-0/workspaces/ws-q" ] || fail "the refused create left a directory"

# layoutctl: a non-zero exit and the same words.
if "$LAYOUTCTL" --socket "$SOCK" add ws-q --quota 32M >"$WORK/add.out" 2>&1; then
    fail "layoutctl add --quota succeeded on a host that cannot enforce it"
fi
has "cannot be enforced here" <"$WORK/add.out" || fail "layoutctl add --quota: $(cat "$WORK/add.out")"

# Without a quota: as before, with a project id, and no enforcement claimed.
api POST /v1/workspaces '{"id":"ws-1"}' >/dev/null; assert_eq 201 "$(st)" "a create without a quota"
w=$(api GET /v1/workspaces/ws-1)
assert_eq 0 "$(jget "$w" "d['quota']['limit_bytes']")" "quota.limit_bytes"
assert_eq None "$(jget "$w" "d['quota']['enforced_by']")" "quota.enforced_by where nothing enforces it"
[ "$(jget "$w" "d['quota']['project_id']")" -ge 1 ] || fail "no project id: $w"
echo hello >"$WORK/mnt/ws-1/f" || fail "cannot write into ws-1"

# An online change: refused the same way, and the record unchanged.
if "$LAYOUTCTL" --socket "$SOCK" quota ws-1 1G >"$WORK/q.out" 2>&1; then
    fail "layoutctl quota succeeded on a host that cannot enforce it"
fi
has "cannot be enforced here" <"$WORK/q.out" || fail "layoutctl quota: $(cat "$WORK/q.out")"
out=$(api PUT /v1/workspaces/ws-1/quota '{"quota":"1G"}'); assert_eq 501 "$(st)" "PUT quota"
out=$(api PUT /v1/workspaces/ws-1/quota '{"quota":"1G","x":1}'); assert_eq 400 "$(st)" "PUT quota with an unknown field"
assert_eq 0 "$(jget "$(api GET /v1/workspaces/ws-1)" "d['quota_bytes']")" "quota_bytes after the refused change"

# A quota change recorded by an agent that died before it ended (the
# record's quota_pending, edited in here; the VM suite kills an agent,
# edits the record the same way, and sees the next agent complete it). While it is recorded, whatever
# either limit forbids holds: the daemon starts without a package store.
# No volume enforces quotas here, so the change cannot complete: it stays
# recorded and shown, and removing the workspace drops it.
running() { [ "$(jget "$(api GET /v1/workspaces/ws-1)" "d['daemon']['state']")" = running ]; }
[ "$(jget "$(api GET /v1/workspaces/ws-1)" "d['package_store']")" != None ] ||
    fail "ws-1 has no package store on loop-xfs (package_store: auto)"
[ -d "$WORK/mnt/ws-1/.layoutd-store" ] || fail "ws-1's mount shows no package store before the change"
stop_agent
REC=$WORK/root/layoutd-state.json
[ -f "$REC" ] || fail "no record at $REC"
"$PY" -c '
import json, sys
p = sys.argv[1]
d = json.load(open(p))
for w in d["workspaces"]:
    if w["id"] == "ws-1":
        w["quota_pending"] = 1 << 30
json.dump(d, open(p, "w"), indent=1)
' "$REC" || fail "cannot edit the record"
start_agent "$L"
wait_for 30 running || fail "ws-1 not running after the restart: $(api GET /v1/workspaces/ws-1)"
w=$(api GET /v1/workspaces/ws-1)
assert_eq $((1 << 30)) "$(jget "$w" "d['quota']['pending_bytes']")" "the recorded change, shown"
assert_eq 0 "$(jget "$w" "d['quota_bytes']")" "quota_bytes while the change is recorded"
assert_eq None "$(jget "$w" "d['package_store']")" "a store for a daemon started while a quota is being set"
[ ! -e "$WORK/mnt/ws-1/.layoutd-store" ] || fail "ws-1's mount shows a store while a quota is being set"
# The agent's own saves keep the intent (written only while it is set):
# the record that names the daemon this agent started still has it.
api PUT /v1/workspaces/ws-1/quota '{"quota":"2G"}' >/dev/null; assert_eq 501 "$(st)" "PUT quota with an intent"
pid=$(jget "$w" "d['daemon']['pid']")
saved_with_intent() {
    "$PY" -c '
import json, sys
w = [w for w in json.load(open(sys.argv[1]))["workspaces"] if w["id"] == "ws-1"][0]
sys.exit(0 if w["daemon"]["pid"] == int(sys.argv[2]) and w.get("quota_pending") == 1 << 30 else 1)
' "$REC" "$pid"
}
wait_for 10 saved_with_intent || fail "the agent's record (daemon $pid) dropped the intent: $(grep -n pending "$REC")"
out=$(api DELETE /v1/workspaces/ws-1); assert_eq 200 "$(st)" "removing ws-1 (data kept): $out"
no_intent() { ! grep -q '"quota_pending"' "$REC"; }
wait_for 10 no_intent || fail "the removed workspace's recorded change stays in the record"
stop_agent
log "PASS"
