#!/usr/bin/env bash
# Full volumes, for real (issue "Capacity that runs itself"):
#  1. a workspace fills its ext4 state volume from inside: the volume turns
#     warning past capacity.warn, then degraded when full, each within one
#     flush-probe interval, with a problem naming the figure; emptied, ok;
#  2. a loop-xfs pool with growth: a writer fills a workspace while the
#     agent grows the volume online, twice; every file reads back
#     byte-identical and the writer never saw ENOSPC;
#  3. loop-ext4 growth on a host without CAP_SYS_RESOURCE (this machine):
#     refused, said (problem, event, metric), the volume degraded (the VM
#     suite proves the ext4 grow itself);
#  4. the host short of space: growth refused (host-short), /v1/capacity
#     counts no carvable volume, and a create that needs one is 507
#     host-full instead of a carve that fails half-way;
#  5. a foreign state-1.img: the agent skips index 1, carves state-2, and
#     reports state-1; /v1/capacity counts the refused index;
#  6. the host filesystem fills under a sparse backing file (something else
#     wrote to it): the volume's writes fail, ext4 goes read-only, and the
#     agent says degraded within a probe interval.
TEST_NAME=agent-capacity
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/agent/lib-agent.sh"
require_root; require_loop; require_fuse; require_cmd curl; require_cmd mkfs.ext4; require_cmd mkfs.xfs
[ -x "$PY" ] || skip "needs /usr/bin/python3"
[ -x "$WSFS" ] || fail "reference daemon not built: $WSFS"

PROBE=2 # flush_probe_interval, seconds

# layout FILE BACKEND SIZE EXTRA_POOL_YAML [WPV] [MIN] [MAX]: one state pool (and
# a content pool the daemons do not use: --cas-threshold=0 keeps every byte
# in the state volume, which is what these tests fill).
layout() {
    cat >"$1" <<YAML
version: 1
root: $WORK/root
pools:
  state:
    backend: $2
    volume_size: $3
    min_volumes: ${6:-1}
    max_volumes: ${7:-4}
    workspaces_per_volume: ${5:-3}
    workspace_reserve: 4MiB
    workspace_reserve_inodes: 64
$4
  content:
    backend: loop-ext4
    volume_size: 64MiB
    gc: false
workspace:
  mount_root: $WORK/mnt
  command: [$WSFS, --cas-threshold=0, --state, "{state_dir}", --content, "{content_dirs}", "{mountpoint}"]
  restart: on-failure
  stop_timeout: 5s
api:
  socket: $SOCK
  group: layoutd-no-such-group
  flush_probe_interval: ${PROBE}s
YAML
}

vol() { api GET "/v1/volumes/$1"; }
health_is() { [ "$(jget "$(vol "$1")" "d['health']")" = "$2" ]; }
has_problem() { jget "$(api GET /v1/status)" "[p['code'] for p in d['problems'] if p.get('volume')=='$1']" | grep -q "'$2'"; }
problem_msg() { jget "$(api GET /v1/status)" "[p['message'] for p in d['problems'] if p.get('volume')=='$1' and p['code']=='$2'][0]"; }
# Between parts: the agent stopped, its volumes and files gone (teardown
# would rightly refuse volumes that still hold workspaces).
# reset_agent LAYOUT [ROOT]: the agent stopped, ROOT's (default $WORK/root)
# volumes unmounted and detached, ROOT and the mount root removed.
reset_agent() {
    local m l root=${2:-$WORK/root}
    stop_agent
    for m in $(findmnt -rn -o TARGET | grep "^$root/" | sort -r); do umount "$m" || fail "umount $m"; done
    for l in $(losetup -n -O NAME,BACK-FILE | awk -v d="$root/" 'index($2, d) == 1 {print $1}'); do
        losetup -d "$l" || fail "losetup -d $l"
    done
    rm -rf "$root" "$WORK/mnt"
}
# A file of $2 KiB of random data at $1; its sha256 goes to $WORK/sums.
put() { head -c "$(($2 * 1024))" /dev/urandom >"$1" && sha256sum "$1" >>"$WORK/sums"; }

# ---- 1. filled from inside: warning, degraded, ok again -----------------------
L=$WORK/fill.yaml
layout "$L" loop-ext4 64MiB "    capacity: {warn: 70%, critical: 90%}"
start_agent "$L"
"$LAYOUTCTL" --socket "$SOCK" add ws-1 >/dev/null || fail "add ws-1"
m=$WORK/mnt/ws-1
health_is state-0 ok || fail "state-0 not ok at start: $(vol state-0)"
size=$(jget "$(vol state-0)" "d['used_bytes'] + d['free_bytes']")
used0=$(jget "$(vol state-0)" "d['used_bytes']")
# Past 70%: write up to 78% of the usable bytes.
need=$(( (size * 78 / 100 - used0) / 1024 / 1024 ))
mkdir "$m/fill"
for i in $(seq 1 "$need"); do put "$m/fill/a$i" 1024 || fail "write a$i failed below the warning mark"; done
sync -f "$m/fill"
wait_for $((PROBE + 1)) health_is state-0 warning || fail "not warning within one probe interval: $(vol state-0)"
log "warning: $(problem_msg state-0 filling)"
problem_msg state-0 filling | grep -Eq 'state-0 is 7[0-9]% full .* past capacity.warn \(70%\)' ||
    fail "warning problem does not name the figure: $(problem_msg state-0 filling)"
assert_eq 200 "$(api GET /v1/health >/dev/null; st)" "a warning keeps /v1/health 200"
# Full: write until ENOSPC.
i=0
while put "$m/fill/b$i" 1024 2>/dev/null; do i=$((i + 1)); [ $i -lt 200 ] || fail "64 MiB volume never filled"; done
sed -i '$d' "$WORK/sums" 2>/dev/null || true # the write that failed
wait_for $((PROBE + 1)) health_is state-0 degraded || fail "not degraded within one probe interval: $(vol state-0)"
has_problem state-0 full || fail "no 'full' problem: $(api GET /v1/status)"
log "degraded: $(problem_msg state-0 full)"
# The last blocks, in small files: then not even a fresh 4 KiB file fits,
# and the flush probe (a fresh file, not a rewrite) sees what the
# workspace sees.
i=0
while head -c 4096 /dev/urandom >"$m/fill/c$i" 2>/dev/null; do i=$((i + 1)); [ $i -lt 20000 ] || break; done
sync -f "$m/fill" 2>/dev/null || true
wait_for $((PROBE * 2 + 1)) has_problem state-0 probe-no-space ||
    fail "the flush probe did not see ENOSPC: $(vol state-0)"
assert_eq 503 "$(api GET /v1/health >/dev/null; st)" "degraded: /v1/health 503"
jget "$(api GET /v1/volumes/state-0)" "d['flush_probe']['last_error']" | grep -q . || fail "no probe error in the volume"
api GET /metrics | has '^layoutd_volume_health{volume="state-0",health="degraded"} 1' || fail "metric health degraded"
api GET /metrics | has '^layoutd_volume_problem{volume="state-0",code="full",level="degraded"} 1' ||
    fail "metric volume_problem full"
# Emptied: ok again, the problems gone.
rm -rf "$m/fill"; : >"$WORK/sums"
sync -f "$m"
wait_for $((PROBE * 2 + 11)) health_is state-0 ok || fail "not ok again after emptying: $(vol state-0)"
assert_eq 200 "$(api GET /v1/health >/dev/null; st)" "ok again: /v1/health 200"
grep -q 'volume state-0: health ok -> warning' "$AGENT_LOG" || fail "transition to warning not logged"
grep -q 'volume state-0: health warning -> degraded' "$AGENT_LOG" || fail "transition to degraded not logged"
reset_agent "$L"

# ---- 2. loop-xfs grows online under a writer ---------------------------------
L=$WORK/xfs.yaml
layout "$L" loop-xfs 320MiB "    growth: {threshold: 60%, step: double, max_size: 1280MiB, host_reserve: 1GiB}"
start_agent "$L"
"$LAYOUTCTL" --socket "$SOCK" add ws-1 >/dev/null || fail "add ws-1"
m=$WORK/mnt/ws-1
mkdir "$m/data"
: >"$WORK/sums"
# 900 MiB through one workspace: more than the volume starts with, less
# than its max; the writer must never see ENOSPC.
for i in $(seq 1 450); do
    put "$m/data/f$i" 2048 || fail "the writer failed at file $i (growth did not keep up): $(vol state-0)"
    [ $((i % 50)) -eq 0 ] && sync -f "$m/data"
done
sync -f "$m/data"
v=$(vol state-0)
grows=$(jget "$v" "d['growth']['grows']")
[ "$grows" -ge 2 ] || fail "expected at least 2 grows, got $grows: $v"
backing=$(jget "$v" "d['backing_size_bytes']")
[ "$backing" -gt $((640 * 1024 * 1024)) ] || fail "backing file not grown past 640MiB: $backing"
[ "$backing" -le $((1280 * 1024 * 1024)) ] || fail "grew past max_size: $backing"
log "grew $grows times to $backing bytes under the writer"
grep -q 'volume state-0: grew from 320.0M to 640.0M online' "$AGENT_LOG" || fail "first grow not logged"
# Every byte back, through the mount and after dropping the caches.
echo 3 >/proc/sys/vm/drop_caches
sha256sum --quiet -c "$WORK/sums" || fail "data differs after growing"
# The filesystem really is larger: XFS saw the new size.
assert_eq "$(( $(stat -f -c '%b*%S' "$WORK/root/volumes/state-0") ))" "$(jget "$(vol state-0)" "d['size_bytes']")" "size_bytes is the fs's"
api GET /metrics | has -E "^layoutd_volume_grows_total\{volume=\"state-0\"\} $grows" || fail "grows metric"
reset_agent "$L"

# ---- 3. ext4 without CAP_SYS_RESOURCE: refused and said -----------------------
# CAP_SYS_RESOURCE is capability 24.
if [ $(( 0x$(awk '/^CapEff:/ {print $2}' /proc/self/status) >> 24 & 1 )) = 1 ]; then
    log "this host has CAP_SYS_RESOURCE: ext4 growth is tested for real in the VM suite; skipping part 3"
else
    L=$WORK/ext4.yaml
    layout "$L" loop-ext4 64MiB "    growth: {threshold: 60%, max_size: 512MiB, host_reserve: 1GiB}"
    start_agent "$L"
    "$LAYOUTCTL" --socket "$SOCK" add ws-1 >/dev/null || fail "add ws-1"
    m=$WORK/mnt/ws-1
    mkdir "$m/d"
    for i in $(seq 1 45); do put "$m/d/f$i" 1024 || break; done
    sync -f "$m/d"
    wait_for 15 has_problem state-0 growth-refused || fail "growth refusal not reported: $(api GET /v1/status)"
    problem_msg state-0 growth-refused | grep -q CAP_SYS_RESOURCE || fail "refusal does not say why"
    health_is state-0 degraded || fail "refused growth past the threshold must degrade: $(vol state-0)"
    assert_eq refused "$(jget "$(vol state-0)" "d['growth']['state']")" "growth.state"
    api GET /metrics | has '^layoutd_volume_growth_refused{volume="state-0",reason="no-capability"} 1' ||
        fail "growth_refused metric"
    grep -q 'volume state-0: growth refused (no-capability)' "$AGENT_LOG" || fail "refusal not logged"
    assert_eq 1 "$(grep -c 'growth refused (no-capability)' "$AGENT_LOG")" "a refusal is logged once, not every look"
    # The events stream has it.
    curl -s --max-time 2 --unix-socket "$SOCK" 'http://layoutd/v1/events?since=0' >"$WORK/events" || true
    grep -q '"volume.growth_refused"' "$WORK/events" || fail "no volume.growth_refused event"
    # Placement stops putting workspaces there: the next one carves state-1.
    out=$(api POST /v1/workspaces '{"id":"ws-2"}'); assert_eq 201 "$(st)" "create ws-2 ($out)"
    assert_eq state-1 "$(jget "$(api GET /v1/workspaces/ws-2)" "d['volume']")" "ws-2 avoids the degraded state-0"
    reset_agent "$L"
fi

# ---- 4. the host short of space ------------------------------------------------
# On a host filesystem of its own: the reserve is set from its free space,
# which nothing but this part moves (the machine's /tmp is shared with the
# tests that run beside this one, and with the suite's background builds).
truncate -s 2G "$WORK/short.img"
mkfs.ext4 -q -m 0 "$WORK/short.img"
mkdir -p "$WORK/short"
mount -o loop "$WORK/short.img" "$WORK/short"
L=$WORK/host.yaml
free=$(df -B1 --output=avail "$WORK/short" | tail -n1)
layout "$L" loop-xfs 320MiB "    growth: {threshold: 60%, max_size: 1280MiB, host_reserve: $(( free / 1024 / 1024 - 200 ))MiB}" 1 1 4
sed -i "s|^root: .*|root: $WORK/short/root|" "$L"
start_agent "$L"
c=$(api GET /v1/capacity)
assert_eq 0 "$(jget "$c" "[p for p in d['pools'] if p['role']=='state'][0]['carvable_volumes']")" "carvable on a short host"
assert_eq host-space "$(jget "$c" "[p for p in d['pools'] if p['role']=='state'][0]['carvable_limit']")" "carvable_limit"
assert_eq 1 "$(jget "$c" "d['workspace_slots_free']")" "only the existing volume's slot counts"
"$LAYOUTCTL" --socket "$SOCK" add ws-1 >/dev/null || fail "add ws-1 (fits the existing volume)"
e=$(api POST /v1/workspaces '{"id":"ws-2"}')
assert_eq 507 "$(st)" "a create that needs a new volume on a short host ($e)"
jget "$e" "d['error']['message']" | grep -q 'does not fit on the host' || fail "507 does not say why: $e"
[ ! -e "$WORK/short/root/images/state-1.img" ] || fail "a carve was started on a short host"
m=$WORK/mnt/ws-1; mkdir "$m/d"
for i in $(seq 1 110); do put "$m/d/f$i" 2048 2>/dev/null || break; done
sync -f "$m/d"
wait_for 15 has_problem state-0 growth-refused || fail "host-short refusal not reported: $(api GET /v1/status)"
problem_msg state-0 growth-refused | grep -q 'growth.host_reserve' || fail "host-short refusal does not name the setting"
reset_agent "$L" "$WORK/short/root"
umount "$WORK/short" || fail "umount $WORK/short"
l=$(losetup -n -O NAME -j "$WORK/short.img")
[ -z "$l" ] || losetup -d $l

# ---- 5. a foreign state-1.img is skipped, not fatal ----------------------------
L=$WORK/foreign.yaml
layout "$L" loop-ext4 64MiB "" 1 1 4
mkdir -p "$WORK/root/images"
truncate -s 64M "$WORK/root/images/state-1.img"
mkfs.ext4 -q -L someones "$WORK/root/images/state-1.img"
uuid=$(blkid -o value -s UUID "$WORK/root/images/state-1.img")
start_agent "$L"
for w in ws-1 ws-2; do out=$(api POST /v1/workspaces "{\"id\":\"$w\"}"); assert_eq 201 "$(st)" "create $w ($out)"; done
assert_eq state-0 "$(jget "$(api GET /v1/workspaces/ws-1)" "d['volume']")" "ws-1 on state-0"
assert_eq state-2 "$(jget "$(api GET /v1/workspaces/ws-2)" "d['volume']")" "ws-2 skips the foreign state-1"
assert_eq "$uuid" "$(blkid -o value -s UUID "$WORK/root/images/state-1.img")" "the foreign filesystem is untouched"
jget "$(api GET /v1/status)" "[p['message'] for p in d['problems'] if p.get('volume')=='state-1']" | grep -q 'did not create' ||
    fail "state-1 not reported: $(api GET /v1/status)"
c=$(api GET /v1/capacity)
assert_eq 1 "$(jget "$c" "[p for p in d['pools'] if p['role']=='state'][0]['refused_volumes']")" "refused index counted"
# max 4, two in use, one refused: one more can be carved.
assert_eq 1 "$(jget "$c" "[p for p in d['pools'] if p['role']=='state'][0]['carvable_volumes']")" "carvable after a refusal"
reset_agent "$L"

# ---- 6. the host fills under the volume -----------------------------------------
truncate -s 512M "$WORK/host.img"
mkfs.ext4 -q -m 0 "$WORK/host.img"
mkdir -p "$WORK/hostfs"
mount -o loop "$WORK/host.img" "$WORK/hostfs"
on_cleanup "umount -l '$WORK/hostfs' 2>/dev/null || true"
L=$WORK/hostfill.yaml
layout "$L" loop-ext4 256MiB "" 3 1 1
sed -i "s|^root: .*|root: $WORK/hostfs/root|" "$L"
start_agent "$L"
"$LAYOUTCTL" --socket "$SOCK" add ws-1 >/dev/null || fail "add ws-1"
# Someone else fills the host filesystem (the agent never overcommits,
# but it cannot stop other writers).
fallocate -l "$(( $(df -B1 --output=avail "$WORK/hostfs" | tail -n1) - 4096 ))" "$WORK/hostfs/filler" ||
    dd if=/dev/zero of="$WORK/hostfs/filler" bs=1M status=none || true
m=$WORK/mnt/ws-1; mkdir "$m/d"
for i in $(seq 1 100); do head -c 1M /dev/urandom >"$m/d/f$i" 2>/dev/null || break; done
sync -f "$m" 2>/dev/null || true
writes_fail() {
    local v; v=$(vol state-0)
    [ "$(jget "$v" "d['health']")" = degraded ] &&
        jget "$v" "[f['code'] for f in d['findings']]" | grep -Eq "fs-emergency-ro|read-only|fs-shutdown|probe-"
}
wait_for $((PROBE * 2 + 2)) writes_fail || fail "writes failing on a full host, but the volume says: $(vol state-0)"
log "host full: $(jget "$(vol state-0)" "d['message']")"
jget "$(api GET /v1/status)" "[p['code'] for p in d['problems'] if 'host' in p]" | grep -q host-overcommitted ||
    fail "no host problem: $(api GET /v1/status)"
assert_eq 503 "$(api GET /v1/health >/dev/null; st)" "a volume failing writes makes /v1/health 503"
stop_agent
for m in $(findmnt -rn -o TARGET | grep "^$WORK/hostfs/" | sort -r); do umount -l "$m" || true; done
for l in $(losetup -n -O NAME,BACK-FILE | awk -v d="$WORK/hostfs/" 'index($2, d) == 1 {print $1}'); do losetup -d "$l" || true; done
umount "$WORK/hostfs" || umount -l "$WORK/hostfs"

log "OK"
