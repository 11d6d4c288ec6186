#!/usr/bin/env bash
# The agent for real: started as the unit would (NOTIFY_SOCKET), every API
# route called with curl, 21 workspaces placed through the API onto
# elastically carved loop-ext4 volumes (bound 3 -> 7 volumes), the 25th
# refused (pool full, max 8 x 3), /metrics through a real Prometheus parser,
# error codes, SIGHUP with a broken layout, and a clean stop.
TEST_NAME=agent-api
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/agent/lib-agent.sh"
require_root; require_loop; require_fuse; require_cmd curl; require_cmd mkfs.ext4
[ -x "$PY" ] || skip "needs /usr/bin/python3"
[ -x "$WSFS" ] || fail "reference daemon not built: $WSFS"

L=$WORK/layout.yaml
write_layout "$L" 2 8 3
start_agent "$L"
grep -q 'STATUS=' "$NOTIFY_LOG" || fail "no STATUS= line sent"

# --- reads -------------------------------------------------------------
s=$(api GET /v1/status); assert_eq 200 "$(st)" "GET /v1/status"
for f in version pid uptime_sec layout generation volumes workspaces health last_reload_error state problems; do
    jget "$s" "d['$f']" >/dev/null || fail "status lacks $f: $s"
done
assert_eq ready "$(jget "$s" "d['state']")" "status.state"
assert_eq 3 "$(jget "$s" "d['volumes']['ok']")" "volumes up (state-0, state-1, content-0)"

v=$(api GET /v1/volumes); assert_eq 200 "$(st)" "GET /v1/volumes"
assert_eq 3 "$(jget "$v" "len(d['volumes'])")" "volume count"
for f in name role backend device direct_io fs_type uuid flush_scope health mountpoint size_bytes used_bytes free_bytes inodes free_inodes backing_allocated_bytes workspaces tenant writeback io; do
    jget "$v" "d['volumes'][0]['$f']" >/dev/null 2>&1 || fail "volume lacks $f"
done
# direct_io is what the kernel says: compare with sysfs.
dev=$(jget "$v" "d['volumes'][0]['device']")
assert_eq "$(cat /sys/block/$(basename "$dev")/loop/dio)" "$( [ "$(jget "$v" "d['volumes'][0]['direct_io']")" = True ] && echo 1 || echo 0)" "direct_io matches sysfs"
one=$(api GET /v1/volumes/state-0); assert_eq 200 "$(st)" "GET /v1/volumes/state-0"
assert_eq state-0 "$(jget "$one" "d['name']")" "volume name"
api GET /v1/volumes/nope >/dev/null; assert_eq 404 "$(st)" "unknown volume"
c=$(api GET /v1/capacity); assert_eq 200 "$(st)" "GET /v1/capacity"
assert_eq 24 "$(jget "$c" "d['workspace_slots_free']")" "capacity before creates"

# --- 21 workspaces through the API -------------------------------------
for i in $(seq 1 21); do
    out=$(api POST /v1/workspaces "{\"id\":\"ws-$i\"}")
    assert_eq 201 "$(st)" "create ws-$i ($out)"
done
all_running() {
    local w; w=$(api GET /v1/workspaces)
    [ "$(jget "$w" "sum(1 for x in d['workspaces'] if x['daemon']['state']=='running')")" = 21 ]
}
wait_for 120 all_running || { api GET /v1/workspaces; fail "not all 21 workspaces running"; }
w=$(api GET /v1/workspaces)
assert_eq 7 "$(jget "$w" "len(set(x['volume'] for x in d['workspaces']))")" "21 workspaces on 7 volumes"
assert_eq 3 "$(jget "$w" "max(x['flush_scope'] for x in d['workspaces'])")" "flush scope bound"
assert_eq 2 "$(jget "$w" "len([x for x in d['workspaces'] if x['id']=='ws-1'][0]['neighbours'])")" "ws-1 has 2 neighbours"
# Each mount serves files that land in its state directory.
echo hello >"$WORK/mnt/ws-5/hello.txt"
sd=$(jget "$w" "[x for x in d['workspaces'] if x['id']=='ws-5'][0]['state_dir']")
assert_eq hello "$(cat "$sd/hello.txt")" "file written through ws-5's mount"

# --- the package store: one per tenant and state volume -------------------
wj() { jget "$w" "[x for x in d['workspaces'] if x['id']=='$1'][0]$2"; }
ps=$(wj ws-5 "['package_store']")
assert_eq "$WORK/mnt/ws-5/.layoutd-store" "$ps" "ws-5's package_store"
v5=$(wj ws-5 "['volume']"); n5=$(wj ws-5 "['neighbours'][0]")
other=$(jget "$w" "[x['id'] for x in d['workspaces'] if x['volume']!='$v5'][0]")
vm=$(jget "$(api GET "/v1/volumes/$v5")" "d['mountpoint']")
echo pkg >"$ps/shared.txt"
assert_eq pkg "$(cat "$vm/stores/_shared/shared.txt")" "a store file on its volume (stores/_shared: no tenant)"
assert_eq pkg "$(cat "$WORK/mnt/$n5/.layoutd-store/shared.txt")" "a neighbour on the volume sees the store"
[ -e "$WORK/mnt/$other/.layoutd-store/shared.txt" ] && fail "a workspace on another volume sees the store"
ln "$ps/shared.txt" "$WORK/mnt/ws-5/linked.txt" || fail "ln from the store"
[ "$(stat -c %i "$ps/shared.txt")" != "$(stat -c %i "$WORK/mnt/ws-5/linked.txt")" ] || fail "ln from the store shared the inode"
assert_eq pkg "$(cat "$WORK/mnt/ws-5/linked.txt")" "the file linked from the store"

# --- the pool fills: 22..24 fit, the 25th is refused, nothing changes ---
# ws-22 has a tenant: its store is the tenant's, not the shared one.
api POST /v1/workspaces '{"id":"ws-22","tenant":"acme"}' >/dev/null; assert_eq 201 "$(st)" "create ws-22 (tenant acme)"
for i in 23 24; do api POST /v1/workspaces "{\"id\":\"ws-$i\"}" >/dev/null; assert_eq 201 "$(st)" "create ws-$i"; done
running22() { [ "$(jget "$(api GET /v1/workspaces/ws-22)" "d['daemon']['state']")" = running ]; }
wait_for 60 running22 || fail "ws-22 did not start"
v22=$(jget "$(api GET /v1/volumes/$(jget "$(api GET /v1/workspaces/ws-22)" "d['volume']"))" "d['mountpoint']")
echo acme >"$WORK/mnt/ws-22/.layoutd-store/mine.txt"
assert_eq acme "$(cat "$v22/stores/acme/mine.txt")" "tenant acme's store file on its volume"
[ -e "$WORK/mnt/ws-22/.layoutd-store/shared.txt" ] && fail "tenant acme sees the tenantless workspaces' store"
before=$(losetup -n -O NAME,BACK-FILE | grep -c "$WORK" || true)
e=$(api POST /v1/workspaces '{"id":"ws-25"}')
assert_eq 507 "$(st)" "25th create: pool full"
jget "$e" "d['error']['message']" | grep -q max_volumes || fail "refusal does not name the setting: $e"
assert_eq "$before" "$(losetup -n -O NAME,BACK-FILE | grep -c "$WORK" || true)" "no volume carved by a refusal"
api GET /v1/workspaces/ws-25 >/dev/null; assert_eq 404 "$(st)" "refused workspace not recorded"
# layoutctl why explains the refusal, volume by volume, without changing anything.
if "$LAYOUTCTL" why ws-25 --layout "$L" >"$WORK/why.txt"; then fail "why: a refused placement exited 0"; fi
grep -q "max_volumes" "$WORK/why.txt" || fail "why does not name the setting: $(cat "$WORK/why.txt")"
assert_eq 8 "$(grep -c 'at the bound' "$WORK/why.txt")" "why lists all 8 volumes at the bound"
assert_eq 0 "$(jget "$(api GET /v1/capacity)" "d['workspace_slots_free']")" "capacity when full"

# --- errors ------------------------------------------------------------
api POST /v1/workspaces '{"id":' >/dev/null; assert_eq 400 "$(st)" "invalid JSON"
api POST /v1/workspaces '{"id":"../etc"}' >/dev/null; assert_eq 400 "$(st)" "bad id"
api POST /v1/workspaces '{"id":"ws-1"}' >/dev/null; assert_eq 409 "$(st)" "duplicate id"
api GET /v1/nope >/dev/null; assert_eq 404 "$(st)" "unknown route"
e=$(api POST /v1/workspaces '{"id":"nul\u0000../../etc"}'); assert_eq 400 "$(st)" "an id with an embedded NUL ($e)"
e=$(api POST /v1/workspaces '{"id":"a1","id":"b1"}'); assert_eq 400 "$(st)" "a key given twice ($e)"
api GET /v1/workspaces/b1 >/dev/null; assert_eq 404 "$(st)" "nothing created from a duplicate key"
e=$(api GET '/v1/status?pretty=1'); assert_eq 400 "$(st)" "an unknown query parameter ($e)"
jget "$e" "d['error']['message']" | grep -q 'Unknown query parameter' || fail "unknown query message: $e"
# Nothing is percent-decoded: "%00" must not cut an id or a value short.
api DELETE '/v1/workspaces/ws-1%00junk' >/dev/null; assert_eq 400 "$(st)" "an id with an escaped NUL in the path"
api DELETE '/v1/workspaces/ws-1?destroy_data=true%00x' >/dev/null; assert_eq 400 "$(st)" "a boolean with an escaped NUL"
e=$(api DELETE '/v1/workspaces/ws-1?destroy_data=false&destroy_data=true'); assert_eq 400 "$(st)" "a boolean given twice ($e)"
api GET /v1/workspaces/ws-1 >/dev/null; assert_eq 200 "$(st)" "ws-1 is still there after the refused deletes"
h=$(api GET /v1/health); assert_eq 200 "$(st)" "GET /v1/health on a healthy host ($h)"
api POST /v1/workspaces/nope/restart >/dev/null; assert_eq 404 "$(st)" "restart unknown workspace"

# --- restart and delete --------------------------------------------------
pid=$(jget "$(api GET /v1/workspaces/ws-2)" "d['daemon']['pid']")
api POST /v1/workspaces/ws-2/restart >/dev/null; assert_eq 202 "$(st)" "restart ws-2"
restarted() { local j; j=$(api GET /v1/workspaces/ws-2); [ "$(jget "$j" "d['daemon']['state']")" = running ] && [ "$(jget "$j" "d['daemon']['pid']")" != "$pid" ]; }
wait_for 30 restarted || fail "ws-2 did not come back with a new pid"
api DELETE /v1/workspaces/ws-24 >/dev/null; assert_eq 200 "$(st)" "delete ws-24 (data kept)"
gone() { api GET /v1/workspaces >/dev/null; [ "$(jget "$(api GET /v1/workspaces)" "len(d['workspaces'])")" = 23 ]; }
wait_for 30 gone || fail "ws-24 not removed"

# --- operations and the event stream, with real clients --------------------
# layoutctl events follows the stream while an operation runs; curl waits
# on the operation resource.
"$LAYOUTCTL" --socket "$SOCK" events --since 0 --json >"$WORK/events.jsonl" 2>&1 &
ev_pid=$!
track_pid "$ev_pid"
out=$(api POST '/v1/workspaces?wait=0' '{"id":"ws-op"}')
assert_eq 202 "$(st)" "create with ?wait=0 answers 202 with an operation ($out)"
op=$(jget "$out" "d['operation']['id']")
loc=/v1/operations/$op
done_op=$(api GET "$loc?wait=60")
assert_eq 200 "$(st)" "GET $loc?wait=60 ($done_op)"
assert_eq succeeded "$(jget "$done_op" "d['state']")" "operation $op state"
jget "$done_op" "d['steps']" | grep -q 'FUSE daemon' || fail "operation steps: $done_op"
assert_eq running "$(jget "$(api GET /v1/workspaces/ws-op)" "d['daemon']['state']")" "ws-op runs when its operation succeeded"
jget "$(api GET /v1/operations)" "[o['id'] for o in d['operations']]" | grep -q "$op" || fail "operation not listed"
api GET /v1/operations/nope >/dev/null; assert_eq 404 "$(st)" "unknown operation"
"$LAYOUTCTL" --socket "$SOCK" rm ws-op >/dev/null || fail "layoutctl rm ws-op (waits for its operation)"
got_events() { grep -q '"workspace.state"' "$WORK/events.jsonl" && grep -q '"to": *"running"' "$WORK/events.jsonl" &&
               grep -q '"ws-op"' "$WORK/events.jsonl"; }
wait_for 10 got_events || fail "the event stream lacks ws-op's state changes: $(tail -5 "$WORK/events.jsonl")"
kill "$ev_pid" 2>/dev/null; wait "$ev_pid" 2>/dev/null || true
# Resuming: ?since=N replays what came after N, in order.
first=$(head -n1 "$WORK/events.jsonl" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["seq"])')
curl -s --max-time 2 --unix-socket "$SOCK" "http://layoutd/v1/events?since=$first" >"$WORK/events2.jsonl" || true
second=$(head -n1 "$WORK/events2.jsonl" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["seq"])')
assert_eq $((first + 1)) "$second" "?since=$first resumes at the next event"
# A cursor from an earlier agent (beyond the last event) replays from the start.
curl -s --max-time 2 --unix-socket "$SOCK" "http://layoutd/v1/events?since=99999999" >"$WORK/events3.jsonl" || true
third=$(head -n1 "$WORK/events3.jsonl" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["seq"])')
assert_eq 1 "$third" "?since beyond the last event replays from the first"

# --- metrics through a real parser ----------------------------------------
curl -s --unix-socket "$SOCK" http://layoutd/metrics >"$WORK/metrics.txt"
"$PY" - "$WORK/metrics.txt" <<'PYEOF' || fail "metrics do not parse"
import sys
from prometheus_client.parser import text_string_to_metric_families
fams = {f.name: f for f in text_string_to_metric_families(open(sys.argv[1]).read())}
names = set(fams)
need = {"layoutd_volume_workspaces", "layoutd_volume_free_bytes", "layoutd_volume_direct_io",
        "layoutd_workspace_restarts", "layoutd_workspace_up", "layoutd_volume_flush_probe_seconds",
        "layoutd_layout_generation", "process_resident_memory_bytes", "process_open_fds",
        "process_start_time_seconds", "process_cpu_seconds", "process_max_fds"}
missing = need - names
if missing:
    sys.exit("missing families: %s" % sorted(missing))
# issue 39: the generation is a value, not a label (a label starts a new
# series at every reload); the process figures are real.
info = fams["layoutd_info"].samples[0]
if "generation" in info.labels:
    sys.exit("layoutd_info carries the generation as a label: %s" % info.labels)
if fams["layoutd_layout_generation"].samples[0].value < 1:
    sys.exit("layoutd_layout_generation < 1")
rss = fams["process_resident_memory_bytes"].samples[0].value
fds = fams["process_open_fds"].samples[0].value
import time
start = fams["process_start_time_seconds"].samples[0].value
if not (rss > 1 << 20 and 3 < fds < fams["process_max_fds"].samples[0].value and time.time() - 3600 < start <= time.time() + 1):
    sys.exit("process figures out of range: rss %s fds %s start %s" % (rss, fds, start))
PYEOF
# The probe runs every second (api.flush_probe_interval) in a child; on a
# loaded machine one round of fsyncs can take a while.
probe_sampled() { curl -s --unix-socket "$SOCK" http://layoutd/metrics | has 'layoutd_volume_flush_probe_seconds_count{volume="state-0"} [1-9]'; }
wait_for 90 probe_sampled || fail "flush probe never sampled state-0"
# The figure placement weighs (slow_flush_factor): published per volume.
recent_known() { [ "$(jget "$(api GET /v1/volumes/state-0)" "d['flush_probe']['recent_seconds'] is not None")" = True ]; }
wait_for 30 recent_known || fail "no flush_probe.recent_seconds for state-0: $(api GET /v1/volumes/state-0)"
# layoutctl why weighs the same figures: it asks the agent on the layout's
# socket; not with --root alone (that agent serves the layout's root, not
# necessarily this one), and again when --socket names it.
# (Waited for: the volume that ranks may be sampled later than state-0.)
why_flush() { "$LAYOUTCTL" why ws-new --layout "$L" >"$WORK/why-flush.txt" 2>&1; grep -q ', flush ' "$WORK/why-flush.txt"; }
wait_for 30 why_flush || fail "why shows no flush figure from the agent: $(cat "$WORK/why-flush.txt")"
"$LAYOUTCTL" why ws-new --layout "$L" --root "$WORK/root" >"$WORK/why-root.txt" 2>&1 || true
grep -q 'rank ' "$WORK/why-root.txt" || fail "why --root ranks no volume: $(cat "$WORK/why-root.txt")"
if grep -q ', flush ' "$WORK/why-root.txt"; then fail "why --root used the agent's figures: $(cat "$WORK/why-root.txt")"; fi
"$LAYOUTCTL" --socket "$SOCK" why ws-new --layout "$L" --root "$WORK/root" >"$WORK/why-sock.txt" 2>&1 || true
grep -q ', flush ' "$WORK/why-sock.txt" || fail "why --socket --root shows no flush figure: $(cat "$WORK/why-sock.txt")"
# --socket after the verb, as every client verb takes it (issue 39).
"$LAYOUTCTL" why ws-new --layout "$L" --root "$WORK/root" --socket "$SOCK" >"$WORK/why-sock2.txt" 2>&1 || true
grep -q ', flush ' "$WORK/why-sock2.txt" || fail "why ... --socket (after the verb): $(cat "$WORK/why-sock2.txt")"

# --- SIGHUP with a broken layout: the old one keeps running -------------
cp "$L" "$L.good"
printf 'version: 1\nroot: %s/root\npools:\n  state:\n    backend: loop-ext4\n    workspace_per_volume: 3\n' "$WORK" >"$L"
kill -HUP "$AGENT_PID"
has_error() { [ "$(jget "$(api GET /v1/status)" "d['last_reload_error'] is not None")" = True ]; }
wait_for 10 has_error || fail "reload error not shown in /v1/status"
jget "$(api GET /v1/status)" "d['last_reload_error']['message']" | grep -q "layout.yaml:6:5" || fail "reload error lacks file:line:col"
assert_eq 1 "$(jget "$(api GET /v1/status)" "d['generation']")" "generation unchanged after a refused reload"
assert_eq 23 "$(jget "$(api GET /v1/workspaces)" "sum(1 for x in d['workspaces'] if x['daemon']['state']=='running')")" "workspaces still running"
cp "$L.good" "$L"
api POST /v1/reload >/dev/null; assert_eq 200 "$(st)" "POST /v1/reload with the good layout"
assert_eq None "$(jget "$(api GET /v1/status)" "d['last_reload_error']")" "reload error cleared"

# --- the record: written off the loop, durable before an answer ---------
rec=$WORK/root/layoutd-state.json
in_record() { "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if [w for w in d["workspaces"] if w["id"]==sys.argv[2] and w["active"]] else 1)' "$rec" "$1"; }
known() { "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if [w for w in d["workspaces"] if w["id"]==sys.argv[2]] else 1)' "$rec" "$1"; }
# A destroy deletes only once "inactive" is on disk; when it answers,
# the record no longer knows the workspace and its data is gone.
for w in ws-22 ws-23; do
    sd=$(jget "$(api GET /v1/workspaces/$w)" "d['state_dir']")
    api DELETE "/v1/workspaces/$w?destroy_data=true" >/dev/null; assert_eq 200 "$(st)" "destroy $w"
    known $w && fail "$w destroyed but still in the record file"
    [ ! -e "$sd" ] || fail "$w destroyed but $sd is still there"
done
out=$(api POST /v1/workspaces '{"id":"ws-30"}'); assert_eq 201 "$(st)" "create ws-30 ($out)"
# (This holds also if the answer did not wait: a daemon starts slower
# than a write. The unwritable record below is what proves the waiting.)
in_record ws-30 || fail "ws-30 was answered 201 but is not in the record file"
# The record cannot be written (an immutable root directory): a create's
# intent cannot be made durable, so nothing of it is made (no directory a
# record on disk would not explain), and its answer says so; so do status
# and metrics. Once the directory is writable again the agent saves on its
# own (a retry with backoff), with no other change needed, and the id is
# free for a create that now works.
[ -n "$WORK" ] && [ -f "$rec" ] || fail "no record at $rec" # never chattr anything but this test's root
on_cleanup "chattr -i '$WORK/root' 2>/dev/null || true"
if ! chattr +i "$WORK/root" 2>/dev/null; then
    log "this filesystem has no immutable flag ($(stat -f -c %T "$WORK")): the unwritable-record part is skipped"
else
    e=$(api POST /v1/workspaces '{"id":"ws-31"}'); assert_eq 500 "$(st)" "create with an unwritable record ($e)"
    assert_eq record_unsaved "$(jget "$e" "d['error']['code']")" "error code"
    problem_codes() { jget "$(api GET /v1/status)" "[p['code'] for p in d['problems']]"; }
    problem_codes | has record-unsaved || fail "no record-unsaved problem: $(api GET /v1/status)"
    assert_eq 503 "$(api GET /v1/health >/dev/null; st)" "an unsaved record makes /v1/health 503"
    metric_unsaved() { api GET /metrics | has "^layoutd_record_unsaved $1"; }
    wait_for 5 metric_unsaved 1 || fail "layoutd_record_unsaved is not 1"
    in_record ws-31 && fail "ws-31 is in the record although it could not be written"
    chattr -i "$WORK/root"
    saved_again() { local c; c=$(problem_codes) && ! has record-unsaved <<<"$c"; }
    wait_for 40 saved_again || fail "record-unsaved stays once the record is writable again"
    wait_for 5 metric_unsaved 0 || fail "layoutd_record_unsaved is not 0 again"
    grep -q 'The record .* is saved again' "$AGENT_LOG" || fail "recovery not logged"
    in_record ws-31 && fail "ws-31, refused while the record could not be written, is in the record"
    compgen -G "$WORK/root/volumes/state-*/workspaces/ws-31" >/dev/null && fail "ws-31's directory was made without a durable intent"
    api POST /v1/workspaces '{"id":"ws-31"}' >/dev/null; assert_eq 201 "$(st)" "ws-31 once the record is writable"
    in_record ws-31 || fail "ws-31 is not in the record after its create"
    api DELETE /v1/workspaces/ws-31 >/dev/null; assert_eq 200 "$(st)" "delete ws-31"
fi
api DELETE /v1/workspaces/ws-30 >/dev/null; assert_eq 200 "$(st)" "delete ws-30"
gone2() { [ "$(jget "$(api GET /v1/workspaces)" "len(d['workspaces'])")" = 21 ]; }
wait_for 30 gone2 || fail "ws-30 and ws-31 not removed"
api GET /metrics | has '^layoutd_record_writes_total [1-9]' || fail "no record writes counted"

# --- the bash completion asks the agent that --socket names ---------------
# (before or after the verb); without it, the default socket, where no
# agent of this test runs.
complete_ids() (
    PATH=$LAYOUTD_BUILD_DIR/agent:$PATH
    . "$LAYOUTD_SOURCE_DIR/agent/ctl/layoutctl.bash-completion"
    COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _layoutctl; echo "${COMPREPLY[*]}"
)
want=$(jget "$(api GET /v1/workspaces)" "' '.join(sorted(w['id'] for w in d['workspaces'] if w['id'].startswith('ws-2')))")
[ -n "$want" ] || fail "no workspace ws-2* to complete"
sorted_words() { tr ' ' '\n' | LC_ALL=C sort | xargs; }
[ "$(complete_ids layoutctl --socket "$SOCK" rm ws-2 | sorted_words)" = "$want" ] ||
    fail "completion with --socket before the verb: '$(complete_ids layoutctl --socket "$SOCK" rm ws-2)', not '$want'"
# bash hands "--socket=PATH" over as three words (COMP_WORDBREAKS has "=").
[ "$(complete_ids layoutctl show --socket = "$SOCK" ws-2 | sorted_words)" = "$want" ] ||
    fail "completion with --socket= after the verb: '$(complete_ids layoutctl show --socket = "$SOCK" ws-2)', not '$want'"
[ "$(complete_ids layoutctl --socket = "$SOCK" rm ws-2 | sorted_words)" = "$want" ] ||
    fail "completion with --socket= before the verb: '$(complete_ids layoutctl --socket = "$SOCK" rm ws-2)', not '$want'"
complete_ids layoutctl --socket "$SOCK" show state- | has -w state-0 || fail "volume names not completed"
[ -n "$(complete_ids layoutctl rm ws-2)" ] && [ ! -S /run/layoutd/api.sock ] && fail "ids offered without an agent"

# --- stop: no FUSE mount, no daemon left ---------------------------------
stop_agent
grep -q 'STOPPING=1' "$NOTIFY_LOG" || fail "no STOPPING=1"
[ -z "$(findmnt -rn -t fuse.layoutd-wsfs -o TARGET | grep "$WORK" || true)" ] || fail "FUSE mounts left after stop"
pgrep -f "layoutd-wsfs.*$WORK" >/dev/null && fail "daemons left after stop"
log "OK"
