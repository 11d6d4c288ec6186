#!/usr/bin/env bash
# Teardown is all or nothing, and a kept set comes back whole (issue
# "Nothing lost, nothing crashed", defects 2 and 4):
#  1. after Ctrl-C (SIGINT) the record keeps every workspace active;
#     `teardown --destroy-data` then refuses the whole run and changes
#     nothing: the content pool stays, and every file, large ones (in the
#     pool) included, reads back byte-identical after the next start;
#  2. `--dry-run` shows the plan and changes nothing;
#  3. a plain teardown with only kept data (workspaces removed, data kept):
#     every volume out of service, record and files kept; the next start
#     attaches the whole set again, and a workspace re-created with the
#     same id gets its data back, large files included;
#  4. `--destroy-data --remove-workspaces` destroys everything: no image,
#     no mount, no record.
TEST_NAME=agent-teardown
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/agent/lib-agent.sh"
require_root; require_loop; require_fuse; require_cmd curl; require_cmd mkfs.ext4
[ -x "$PY" ] || skip "needs /usr/bin/python3"

L=$WORK/layout.yaml
write_layout "$L" 1 4 2
lctl() { "$LAYOUTCTL" "$@"; }
td() { "$LAYOUTCTL" teardown --layout "$L" "$@"; }
start_agent "$L"
for w in t1 t2 t3; do lctl --socket "$SOCK" add "$w" >/dev/null || fail "add $w"; done
# Small files (state volumes) and large ones (the content pool).
for w in t1 t2 t3; do
    head -c 100000 /dev/urandom >"$WORK/mnt/$w/odd.bin"
    head -c $((1024 * 1024)) /dev/urandom >"$WORK/mnt/$w/big.bin"
    echo "small $w" >"$WORK/mnt/$w/small.txt"
done
sync
for w in t1 t2 t3; do (cd "$WORK/mnt/$w" && sha256sum odd.bin big.bin small.txt) >"$WORK/$w.sums"; done
objects() { find "$WORK/root/volumes/content-0/objects" -type f ! -name '.tmp.*' | wc -l; }
objects_at_least() { [ "$(objects)" -ge "$1" ]; } # a function: wait_for reruns it
wait_for 10 objects_at_least 6 || fail "large files not in the pool: $(objects) objects"
stop_agent # SIGINT: the daemons stop, the record keeps t1..t3 active

log "1. teardown --destroy-data with active workspaces: refused as a whole"
if td --destroy-data >"$WORK/td1" 2>&1; then fail "teardown --destroy-data succeeded with 3 active workspaces"; fi
grep -q "active workspace" "$WORK/td1" || fail "the refusal does not name the workspaces: $(cat "$WORK/td1")"
grep -q "content-0.*all or nothing\|content-0.*stay recorded" "$WORK/td1" ||
    fail "content-0 is not said to be refused: $(cat "$WORK/td1")"
findmnt -rn "$WORK/root/volumes/content-0" >/dev/null || fail "content-0 was unmounted by a refused teardown"
[ -f "$WORK/root/images/content-0.img" ] || fail "content-0's image was deleted by a refused teardown"
assert_eq 6 "$(objects)" "objects after a refused teardown"
if td >"$WORK/td1b" 2>&1; then fail "plain teardown succeeded with 3 active workspaces"; fi
findmnt -rn "$WORK/root/volumes/state-0" >/dev/null || fail "state-0 was unmounted by a refused teardown"

log "2. --dry-run prints the plan and changes nothing"
td --destroy-data --remove-workspaces --dry-run >"$WORK/dry" || fail "dry run refused: $(cat "$WORK/dry")"
grep -q "^- content-0 .*delete" "$WORK/dry" || fail "dry run does not show content-0's delete: $(cat "$WORK/dry")"
grep -q "^- state-0 .*forget workspace t1" "$WORK/dry" || fail "dry run does not show t1 forgotten: $(cat "$WORK/dry")"
line() { grep -nE "$1" "$WORK/dry" | cut -d: -f1 | sed -n "$2"; }
[ "$(line ' delete ' 1p)" -gt "$(line ' (unmount|detach) ' '$p')" ] ||
    fail "something is deleted before every volume is out of service: $(cat "$WORK/dry")"
[ "$(line '^- content-0 +delete' 1p)" -gt "$(line '^- state-[0-9]+ +delete' '$p')" ] ||
    fail "the content pool is not destroyed last: $(cat "$WORK/dry")"
findmnt -rn "$WORK/root/volumes/content-0" >/dev/null || fail "dry run unmounted content-0"

start_agent "$L"
running() { [ "$(jget "$(api GET /v1/workspaces)" "sum(1 for x in d['workspaces'] if x['daemon']['state']=='running')")" = "$1" ]; }
wait_for 60 running 3 || fail "workspaces not back after the refused teardowns"
echo 3 >/proc/sys/vm/drop_caches
for w in t1 t2 t3; do (cd "$WORK/mnt/$w" && sha256sum -c --quiet "$WORK/$w.sums") || fail "$w: files changed"; done

log "3. plain teardown with kept data only: the whole set comes back"
for w in t1 t2 t3; do lctl --socket "$SOCK" rm "$w" >/dev/null || fail "rm $w (keep data)"; done
stop_agent
td >"$WORK/td3" || fail "plain teardown failed: $(cat "$WORK/td3")"
grep -q "kept in the record" "$WORK/td3" || fail "teardown does not say it kept the set: $(cat "$WORK/td3")"
for v in state-0 state-1 content-0; do
    if findmnt -rn "$WORK/root/volumes/$v" >/dev/null 2>&1; then fail "$v still mounted after teardown"; fi
done
[ -z "$(losetup -n -O NAME,BACK-FILE | awk -v d="$WORK/root/" 'index($2, d) == 1')" ] || fail "loop devices left"
[ -f "$WORK/root/layoutd-state.json" ] || fail "record gone after a plain teardown"
start_agent "$L"
for v in state-0 state-1 content-0; do
    assert_eq up "$(jget "$(api GET /v1/volumes/$v)" "d['state']")" "$v after start"
done
assert_eq "[]" "$(jget "$(api GET /v1/status)" "[p['code'] for p in d['problems'] if p.get('volume')]")" "volume problems"
for w in t1 t2 t3; do lctl --socket "$SOCK" add "$w" >/dev/null || fail "re-add $w"; done
wait_for 60 running 3 || fail "re-added workspaces not running"
echo 3 >/proc/sys/vm/drop_caches
for w in t1 t2 t3; do (cd "$WORK/mnt/$w" && sha256sum -c --quiet "$WORK/$w.sums") || fail "$w: kept data changed"; done

log "4. --destroy-data --remove-workspaces: everything goes"
stop_agent
td --destroy-data --remove-workspaces >"$WORK/td4" || fail "destroy failed: $(cat "$WORK/td4")"
[ -z "$(ls "$WORK/root/images" 2>/dev/null)" ] || fail "images left: $(ls "$WORK/root/images")"
[ ! -e "$WORK/root/layoutd-state.json" ] || fail "record left"
[ -z "$(findmnt -rn -o TARGET | grep "^$WORK/")" ] || fail "mounts left: $(findmnt -rn -o TARGET | grep "^$WORK/")"
[ -z "$(losetup -n -O NAME,BACK-FILE | awk -v d="$WORK/root/" 'index($2, d) == 1')" ] || fail "loop devices left"
log "PASS"
