#!/usr/bin/env bash
# The content pool's sweep through the agent, and the reloads that used to
# pass silently (issue "Capacity that runs itself"):
#  1. objects nothing references are reclaimed by `layoutctl gc`, a dry run
#     deletes nothing, live files stay byte-identical, metrics and events;
#  2. a sweep is refused while a state volume that holds workspace data is
#     out of service;
#  3. a reload that shrinks volume_size is accepted, and the response, the
#     log and /v1/status say the shrink was refused;
#  4. a reload that removes the content pool while the command still names
#     it is refused (the old layout keeps running); one whose command runs
#     the daemon without a pool works end to end.
TEST_NAME=agent-gc-reload
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/agent/lib-agent.sh"
require_root; require_loop; require_fuse; require_cmd curl; require_cmd mkfs.ext4
[ -x "$PY" ] || skip "needs /usr/bin/python3"
[ -x "$WSFS" ] || fail "reference daemon not built: $WSFS"

# layout FILE STATE_SIZE CONTENT_BLOCK COMMAND
layout() {
    cat >"$1" <<YAML
version: 1
root: $WORK/root
pools:
  state:
    backend: loop-ext4
    volume_size: $2
    min_volumes: 1
    max_volumes: 4
    workspaces_per_volume: 1
    workspace_reserve: 4MiB
$3
workspace:
  mount_root: $WORK/mnt
  command: $4
  restart: on-failure
  stop_timeout: 5s
api:
  socket: $SOCK
  group: layoutd-no-such-group
  flush_probe_interval: 2s
YAML
}
CONTENT="  content:
    backend: loop-ext4
    volume_size: 128MiB
    gc: {command: [$WSFS, gc], interval: 1h, grace: 1min, free_threshold: 0%}"
CMD="[$WSFS, --state, \"{state_dir}\", --content, \"{content_dirs}\", \"{mountpoint}\"]"
ctl() { "$LAYOUTCTL" --socket "$SOCK" "$@"; }
objects() { find "$WORK/root/volumes/content-0/objects" -type f ! -name '.tmp.*' | wc -l; }

L=$WORK/layout.yaml
layout "$L" 128MiB "$CONTENT" "$CMD"
start_agent "$L"
ctl add ws-1 >/dev/null || fail "add ws-1"
m=$WORK/mnt/ws-1

# ---- 1. the sweep -----------------------------------------------------------------
# 20 files that die and 5 that live, each above the CAS threshold (64 KiB),
# so each is an object in the pool.
mkdir "$m/dead" "$m/live"
for i in $(seq 1 20); do head -c 300K /dev/urandom >"$m/dead/f$i"; done
for i in $(seq 1 5); do head -c 300K /dev/urandom >"$m/live/f$i"; done
sync -f "$m"
( cd "$m/live" && sha256sum f* ) >"$WORK/live.sums"
objects_at_least() { [ "$(objects)" -ge "$1" ]; } # a function: wait_for reruns it
wait_for 20 objects_at_least 25 || fail "the files did not reach the pool: $(objects) objects"
rm -rf "$m/dead"
sync -f "$m"
before=$(objects)
# Younger than the grace period: nothing goes.
ctl gc >"$WORK/gc0.txt" || fail "gc: $(cat "$WORK/gc0.txt")"
grep -q '^Reclaimed 0 objects' "$WORK/gc0.txt" || fail "young objects were swept: $(cat "$WORK/gc0.txt")"
# Two hours old: the 20 dead ones are garbage, the live ones are not.
find "$WORK/root/volumes/content-0/objects" -type f -exec touch -m -d '2 hours ago' {} +
ctl gc --dry-run >"$WORK/gc1.txt" || fail "gc --dry-run: $(cat "$WORK/gc1.txt")"
grep -q '^Would reclaim 20 objects' "$WORK/gc1.txt" || fail "dry run: $(cat "$WORK/gc1.txt")"
assert_eq "$before" "$(objects)" "a dry run deleted objects"
used0=$(jget "$(api GET /v1/volumes/content-0)" "d['used_bytes']")
ctl gc >"$WORK/gc2.txt" || fail "gc: $(cat "$WORK/gc2.txt")"
grep -q '^Reclaimed 20 objects' "$WORK/gc2.txt" || fail "gc: $(cat "$WORK/gc2.txt")"
assert_eq $((before - 20)) "$(objects)" "objects left after the sweep"
echo 3 >/proc/sys/vm/drop_caches
( cd "$m/live" && sha256sum --quiet -c "$WORK/live.sums" ) || fail "a live file differs after the sweep"
# The space shows in the volume (the sweep asks for a fresh observation).
freed() { [ "$(jget "$(api GET /v1/volumes/content-0)" "d['used_bytes']")" -lt $((used0 - 4 * 1024 * 1024)) ]; }
wait_for 15 freed || fail "content-0 used bytes did not drop: $(api GET /v1/volumes/content-0)"
s=$(api GET /v1/status)
assert_eq 3 "$(jget "$s" "d['gc']['runs']")" "gc runs in /v1/status"
assert_eq 20 "$(jget "$s" "d['gc']['reclaimed_objects']")" "gc reclaimed objects (dry runs do not count)"
met=$(api GET /metrics)
grep -q '^layoutd_gc_reclaimed_objects_total 20$' <<<"$met" || fail "metric reclaimed objects: $(grep layoutd_gc <<<"$met")"
grep -q '^layoutd_gc_last_success_timestamp_seconds ' <<<"$met" || fail "metric last success"
curl -s --max-time 2 --unix-socket "$SOCK" 'http://layoutd/v1/events?since=0' >"$WORK/events" || true
grep -q '"gc.done"' "$WORK/events" || fail "no gc.done event"
grep -q 'content gc (api) done' "$AGENT_LOG" || fail "sweep not logged"

# ---- 2. refused while a state volume with workspace data is out of service ------
ctl add ws-2 >/dev/null || fail "add ws-2"
assert_eq state-1 "$(jget "$(api GET /v1/workspaces/ws-2)" "d['volume']")" "ws-2 on its own volume"
ctl rm ws-2 >/dev/null || fail "rm ws-2 (its data kept)"
umount "$WORK/root/volumes/state-1"
out_of_service() { [ "$(jget "$(api GET /v1/volumes/state-1)" "d['health']")" = failed ]; }
wait_for 15 out_of_service || fail "state-1 not seen unmounted"
if ctl gc >"$WORK/gc3.txt" 2>&1; then fail "gc ran with state-1 out of service"; fi
grep -q 'state-1 holds workspaces but is not in service' "$WORK/gc3.txt" || fail "refusal: $(cat "$WORK/gc3.txt")"
assert_eq $((before - 20)) "$(objects)" "objects after a refused sweep"
mount "$(losetup -n -O NAME -j "$WORK/root/images/state-1.img")" "$WORK/root/volumes/state-1" || fail "remount state-1"

# ---- 3. a reload that shrinks ----------------------------------------------------------
layout "$L" 64MiB "$CONTENT" "$CMD"
r=$(api POST '/v1/reload?wait=30')
assert_eq 200 "$(st)" "reload with a shrink ($r)"
jget "$r" "d['refused']" | grep -q 'shrink' || fail "the reload answer does not say the shrink was refused: $r"
grep -q 'refuse to shrink state-0' "$AGENT_LOG" || fail "the shrink refusal is not logged"
has_shrink() { jget "$(api GET /v1/status)" "[p['message'] for p in d['problems']]" | grep -q 'shrink'; }
has_shrink || fail "/v1/status does not say the shrink was refused: $(api GET /v1/status)"
assert_eq 134217728 "$(jget "$(api GET /v1/volumes/state-0)" "d['backing_size_bytes']")" "state-0 kept its size"

# ---- 4. removing the content pool ----------------------------------------------------
layout "$L" 128MiB "" "$CMD"
gen=$(jget "$(api GET /v1/status)" "d['generation']")
r=$(api POST '/v1/reload?wait=30')
assert_eq 400 "$(st)" "a reload that leaves {content_dirs} without a pool ($r)"
jget "$r" "d['error']['message']" | grep -q "'{content_dirs}' names the content pool" || fail "refusal: $r"
assert_eq "$gen" "$(jget "$(api GET /v1/status)" "d['generation']")" "the refused layout is not running"
# Without a pool, and a command that does not name one: accepted, and a
# new workspace serves.
layout "$L" 128MiB "" "[$WSFS, --state, \"{state_dir}\", \"{mountpoint}\"]"
r=$(api POST '/v1/reload?wait=30')
assert_eq 200 "$(st)" "reload without a content pool ($r)"
assert_eq null "$(jget "$(api GET /v1/status)" "'null' if d['last_reload_error'] is None else 'set'")" "no reload error"
ctl add ws-3 >/dev/null || fail "add ws-3 without a content pool: $(tail -5 "$AGENT_LOG")"
head -c 1M /dev/urandom >"$WORK/big"
cp "$WORK/big" "$WORK/mnt/ws-3/big"
sync -f "$WORK/mnt/ws-3"
cmp "$WORK/big" "$WORK/mnt/ws-3/big" || fail "ws-3 read back"
sd=$(jget "$(api GET /v1/workspaces/ws-3)" "d['state_dir']")
cmp "$WORK/big" "$sd/big" || fail "without a pool the file stays whole in the state dir"
assert_eq null "$(jget "$(api GET /v1/status)" "'null' if d['gc'] is None else 'set'")" "no sweep without a content pool"
log "OK"
