#!/usr/bin/env bash
# A workspace runs only on volumes that are in service (issue "Nothing
# lost, nothing crashed", defect 3):
#  1. every volume carries its identity file, the record knows its UUID,
#     and each daemon is told them (LAYOUTD_STATE_VOLUME_UUID,
#     LAYOUTD_CONTENT_UUIDS);
#  2. the content pool's image moved away while the agent is stopped: on
#     the next start the workspaces are `blocked` with a problem naming
#     content-0, no daemon runs, and nothing is written to the bare
#     directory content-0 would be mounted on;
#  3. the image back and a reload: the pool is in service again, the
#     workspaces start by themselves, and every file (large ones in the
#     pool) reads back byte-identical;
#     While it is away, a create or restart is refused at once (409
#     blocked, naming content-0); queued (--queue) it waits, --wait bounds
#     the command (exit 8, the operation's id and why it is blocked), and
#     the operation completes once the volume is back;
#  4. an unmounted volume under a running agent: a daemon that dies is not
#     restarted on the bare directory (blocked), and comes back with it.
TEST_NAME=agent-blocked
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/agent/lib-agent.sh"
require_root; require_loop; require_fuse; require_cmd curl; require_cmd mkfs.ext4
[ -x "$PY" ] || skip "needs /usr/bin/python3"

L=$WORK/layout.yaml
write_layout "$L" 1 4 3
start_agent "$L"
for w in b1 b2; do "$LAYOUTCTL" --socket "$SOCK" add "$w" >/dev/null || fail "add $w"; done
for w in b1 b2; do
    head -c 300000 /dev/urandom >"$WORK/mnt/$w/big.bin"
    echo "small $w" >"$WORK/mnt/$w/small.txt"
done
sync
for w in b1 b2; do (cd "$WORK/mnt/$w" && sha256sum big.bin small.txt) >"$WORK/$w.sums"; done
state() { jget "$(api GET "/v1/workspaces/$1")" "d['daemon']['state']"; }
state_is() { [ "$(state "$1")" = "$2" ]; }

log "1. identity files, recorded, handed to the daemons"
for v in state-0 content-0; do
    f=$WORK/root/volumes/$v/.layoutd-volume
    [ -f "$f" ] || fail "$v has no identity file"
    uuid=$(sed -n 's/^uuid=//p' "$f")
    rec=$(jget "$(cat "$WORK/root/layoutd-state.json")" "[v['identity'] for v in d['volumes'] if v['name']=='$v'][0]")
    assert_eq "$uuid" "$rec" "$v: the identity file and the record"
done
pid=$(jget "$(api GET /v1/workspaces/b1)" "d['daemon']['pid']")
env=$(tr '\0' '\n' <"/proc/$pid/environ")
grep -qx "LAYOUTD_CONTENT_UUIDS=$(sed -n 's/^uuid=//p' "$WORK/root/volumes/content-0/.layoutd-volume")" <<<"$env" ||
    fail "b1's daemon is not told the content pool's identity: $(grep LAYOUTD_ <<<"$env")"
grep -qx "LAYOUTD_STATE_VOLUME=$WORK/root/volumes/state-0" <<<"$env" || fail "b1's daemon is not told its state volume"

log "2. the content image moved away: blocked, nothing on the bare directory"
stop_agent
umount "$WORK/root/volumes/content-0"
losetup -d "$(losetup -n -O NAME -j "$WORK/root/images/content-0.img")"
mv "$WORK/root/images/content-0.img" "$WORK/content-0.img.away"
start_agent "$L"
for w in b1 b2; do
    wait_for 10 state_is "$w" blocked || fail "$w not blocked without its content pool: $(state "$w")"
    assert_eq None "$(jget "$(api GET "/v1/workspaces/$w")" "d['daemon']['pid']")" "$w has no daemon"
done
jget "$(api GET /v1/workspaces/b1)" "d['daemon']['blocked_by']" | grep -q "content-0" ||
    fail "blocked_by does not name content-0: $(api GET /v1/workspaces/b1)"
jget "$(api GET /v1/status)" "[p['message'] for p in d['problems'] if p.get('workspace')=='b1' and p['code']=='blocked'][0]" |
    grep -q content-0 || fail "no 'blocked' problem naming content-0: $(api GET /v1/status)"
assert_eq 503 "$(api GET /v1/health >/dev/null; st)" "/v1/health while workspaces are blocked"
# Its bare mount point is closed (issue 35, defect 10): nothing lands on
# the host's filesystem through it (root's daemon needs no permission).
for w in b1 b2; do assert_eq 0 "$(stat -c %a "$WORK/mnt/$w")" "$w's bare mount point's mode while blocked"; done
pgrep -f -- "--state $WORK/" >/dev/null && fail "a daemon runs without its content pool: $(pgrep -af -- "--state $WORK/")"
[ -z "$(ls -A "$WORK/root/volumes/content-0" 2>/dev/null)" ] || fail "files on the bare content-0 directory: $(ls -A "$WORK/root/volumes/content-0")"

log "2b. creates and restarts that need content-0: refused at once, or queued and bounded by --wait"
# (issue 35, defect 4: these waited for as long as the fault lasted)
api POST /v1/workspaces '{"id":"b3"}' >"$WORK/b3.out"
assert_eq 409 "$(st)" "a create while content-0 is out of service"
assert_eq blocked "$(jget "$(cat "$WORK/b3.out")" "d['error']['code']")" "its code"
grep -q content-0 "$WORK/b3.out" || fail "the refusal does not name content-0: $(cat "$WORK/b3.out")"
api POST /v1/workspaces/b1/restart >"$WORK/r.out"
assert_eq 409 "$(st)" "a restart while content-0 is out of service"
grep -q '"blocked"' "$WORK/r.out" || fail "the restart's refusal: $(cat "$WORK/r.out")"
rc=0; "$LAYOUTCTL" --socket "$SOCK" add b3 >"$WORK/add.out" 2>&1 || rc=$?
assert_eq 1 "$rc" "layoutctl add while content-0 is out of service (refused)"
start=$SECONDS
rc=0; "$LAYOUTCTL" --socket "$SOCK" add b3 --queue --wait 3 >"$WORK/addq.out" 2>&1 || rc=$?
assert_eq 8 "$rc" "layoutctl add --queue --wait 3 (exit code of a --wait that ran out): $(cat "$WORK/addq.out")"
[ $((SECONDS - start)) -le 15 ] || fail "add --wait 3 took $((SECONDS - start)) s"
grep -q "operation op-" "$WORK/addq.out" || fail "add --wait did not print the operation's id: $(cat "$WORK/addq.out")"
grep -q "blocked: .*content-0" "$WORK/addq.out" || fail "add --wait did not say why: $(cat "$WORK/addq.out")"
op=$(grep -o 'op-[0-9a-f]*' "$WORK/addq.out" | head -1)
jget "$(api GET "/v1/operations/$op")" "d['blocked']" | grep -q content-0 ||
    fail "the queued create's operation does not say it is blocked: $(api GET "/v1/operations/$op")"
rc=0; "$LAYOUTCTL" --socket "$SOCK" restart b2 --queue --wait 2 >"$WORK/rq.out" 2>&1 || rc=$?
assert_eq 8 "$rc" "layoutctl restart --queue --wait 2: $(cat "$WORK/rq.out")"

log "3. the image back, a reload: the workspaces start by themselves, data intact"
mv "$WORK/content-0.img.away" "$WORK/root/images/content-0.img"
"$LAYOUTCTL" --socket "$SOCK" reload >/dev/null || fail "reload"
for w in b1 b2 b3; do wait_for 30 state_is "$w" running || fail "$w not running once content-0 is back: $(state "$w")"; done
op_done() { [ "$(jget "$(api GET "/v1/operations/$op")" "d['state']")" = succeeded ]; }
wait_for 30 op_done || fail "the queued create did not complete once content-0 is back: $(api GET "/v1/operations/$op")"
assert_eq None "$(jget "$(api GET "/v1/operations/$op")" "d['blocked']")" "blocked, once the operation ended"
echo 3 >/proc/sys/vm/drop_caches
for w in b1 b2; do (cd "$WORK/mnt/$w" && sha256sum -c --quiet "$WORK/$w.sums") || fail "$w: files changed"; done
grep -q "unblocked" "$AGENT_LOG" || fail "the unblocking is not logged"

log "4. state-0 unmounted under a running agent: a dead daemon is not restarted on the bare directory"
pids=$(for w in b1 b2; do jget "$(api GET "/v1/workspaces/$w")" "d['daemon']['pid']"; done)
umount -l "$WORK/root/volumes/state-0"
state0_down() { [ "$(jget "$(api GET /v1/volumes/state-0)" "d['state']")" != up ]; }
wait_for 15 state0_down || fail "state-0 still observed up after its unmount"
kill -KILL $(jget "$(api GET /v1/workspaces/b1)" "d['daemon']['pid']")
wait_for 15 state_is b1 blocked || fail "b1 not blocked after its daemon died on an unmounted volume: $(state b1)"
[ ! -e "$WORK/root/volumes/state-0/workspaces" ] || fail "something recreated workspaces/ on the bare state-0 directory"
"$LAYOUTCTL" --socket "$SOCK" reload >/dev/null || fail "reload"
wait_for 30 state_is b1 running || fail "b1 not back with state-0: $(state b1)"
(cd "$WORK/mnt/b1" && sha256sum -c --quiet "$WORK/b1.sums") || fail "b1: files changed"
log "PASS"
