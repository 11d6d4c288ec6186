#!/usr/bin/env bash
# A new user's first hour, on the shipped default layout (issue "Capacity
# that runs itself"): the agent started on layouts/default.yaml, on a host
# filesystem of 20 GB, one workspace, a real clone (the git task: a 300-
# commit repository cloned, worked on, gc'ed) and a full package install
# (1,400 packages, 60,000+ files, 1 GB, pnpm's copy mode) in it, both
# verified; where tests/workloads/pnpm-warm has run, also a real
# `pnpm install --offline` of a real monorepo (88,000 files) into the
# workspace's cache, with the environment the API hands out. The volumes start small (512 MiB / 1 GiB) and must grow under
# the work without a single failed write; afterwards `rm -rf` of it all and
# a sweep give the content pool its space back.
#
# The default layout is used as shipped; only what must differ in a test
# is replaced: the root (on the 20 GB filesystem), the daemon's path (the
# build tree's), the API socket.
TEST_NAME=workloads-default-layout
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/agent/lib-agent.sh"
require_root; require_loop; require_fuse; require_cmd curl; require_cmd mkfs.xfs; require_cmd git
[ -x "$PY" ] || skip "needs /usr/bin/python3"
[ -x "$WSFS" ] || fail "reference daemon not built: $WSFS"
avail=$(df -B1 --output=avail "$WORK" | tail -n1)
[ "$avail" -gt $((24 * 1024 * 1024 * 1024)) ] || skip "needs 24 GiB free below $WORK (has $((avail >> 30)) GiB)"

# A 20 GB host filesystem (sparse: it costs what is written).
truncate -s 20G "$WORK/host.img"
mkfs.ext4 -q -m 0 "$WORK/host.img"
mkdir "$WORK/host"
mount -o loop "$WORK/host.img" "$WORK/host"
# Torn down in order, whatever happened: the daemons (lib-agent's hook,
# registered first), the FUSE mounts, the volumes and their loops, then
# the 20 GB filesystem they live on.
teardown_host() {
    local m l
    for m in $(findmnt -rn -o TARGET | grep "^$WORK/mnt/" | sort -r); do umount -l "$m" 2>/dev/null || true; done
    for m in $(findmnt -rn -o TARGET | grep "^$WORK/host/" | sort -r); do umount "$m" 2>/dev/null || umount -l "$m" || true; done
    for l in $(losetup -n -O NAME,BACK-FILE | awk -v d="$WORK/host/" 'index($2, d) == 1 {print $1}'); do
        losetup -d "$l" 2>/dev/null || true
    done
    umount "$WORK/host" 2>/dev/null || umount -l "$WORK/host" 2>/dev/null || true
}
on_cleanup teardown_host

L=$WORK/default.yaml
sed -e "s|^root: /var/lib/layoutd$|root: $WORK/host/layoutd|" \
    -e "s|/usr/libexec/layoutd/layoutd-wsfs|$WSFS|" \
    -e "s|socket: /run/layoutd/api.sock|socket: $SOCK|" \
    -e "s|^  group: layoutd$|  group: layoutd-no-such-group|" \
    -e "s|^workspace:$|workspace:\n  mount_root: $WORK/mnt|" \
    "$LAYOUTD_SOURCE_DIR/layouts/default.yaml" >"$L"
"$LAYOUTCTL" validate "$L" >/dev/null || fail "the adapted default layout does not validate"
# Everything but those lines is the shipped layout.
diff <(grep -v -e '^root:' -e 'layoutd-wsfs' -e 'socket:' -e '^  group:' -e 'mount_root:' "$LAYOUTD_SOURCE_DIR/layouts/default.yaml") \
     <(grep -v -e '^root:' -e 'layoutd-wsfs' -e 'socket:' -e '^  group:' -e 'mount_root:' "$L") ||
    fail "the test changed more of the default layout than root, daemon path and socket"

start_agent "$L"
"$LAYOUTCTL" --socket "$SOCK" add ws-1 >/dev/null || fail "add ws-1"
m=$WORK/mnt/ws-1
size_of() { jget "$(api GET "/v1/volumes/$1")" "d['backing_size_bytes']"; }
s0=$(size_of state-0); c0=$(size_of content-0)
log "start: state-0 $((s0 >> 20)) MiB, content-0 $((c0 >> 20)) MiB"

export LAYOUTD_BUILD_DIR
t=$SECONDS
"$PY" "$LAYOUTD_TESTS/workloads/tasks.py" run git --profile full --keep --out "$WORK/runs.jsonl" "$m" >/dev/null ||
    fail "the clone failed: $(tail -n1 "$WORK/runs.jsonl")"
log "git (clone, work, gc) done in $((SECONDS - t)) s"
t=$SECONDS
# The real pnpm (below) as a user of the default layout runs it: with the
# environment of the workspace's cache (the API's cache.environment), so
# what it installs goes to native storage, not through the daemon.
export LAYOUTD_WORKLOADS_SOCK=$SOCK LAYOUTD_WORKLOADS_STATS_DIR=$WORK/host/layoutd/run
if ! "$PY" "$LAYOUTD_TESTS/workloads/tasks.py" run pkg-install --profile full --set pnpm_modes=cache --keep \
        --out "$WORK/runs.jsonl" "$m" >/dev/null; then
    grep -E 'grow|health|capacity|refused' "$AGENT_LOG" >&2 || true
    api GET /v1/volumes >&2
    fail "the install failed: $(tail -n1 "$WORK/runs.jsonl")"
fi
# The task verified every entry and removed node_modules itself (rm -rf
# is part of the work); its record says how much it was.
files=$(tail -n1 "$WORK/runs.jsonl" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["info"]["verify"]["entries"])')
log "pkg-install (1400 packages, $files entries verified) done in $((SECONDS - t)) s"
# The real thing too, when tests/workloads/pnpm-warm was run on this host:
# pnpm install --offline of a real monorepo (804 packages, ~88,000 files).
pnpm_info=$(tail -n1 "$WORK/runs.jsonl" | "$PY" -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["info"].get("pnpm")))')
log "real pnpm: $pnpm_info"
# Where it ran (pnpm-warm was run on this host): every direct dependency
# linked from the store, and the daemon served next to no request per
# file it made (about 5 each through the mount).
if [ "$pnpm_info" != null ] && ! grep -q '"skipped"' <<<"$pnpm_info"; then
    jget "$pnpm_info" "d['cache']['hard_linked'] == d['cache']['direct_deps_checked'] > 0" | grep -qx True ||
        fail "the real pnpm in the cache did not hard-link every direct dependency: $pnpm_info"
    jget "$pnpm_info" "d['cache']['daemon_requests_per_file_install'] < 0.5" | grep -qx True ||
        fail "the real pnpm in the cache went through the daemon: $pnpm_info"
fi
[ "$files" -ge 60000 ] || fail "expected 60,000+ entries in the install, verified $files"

# It grew, it is healthy, nothing was refused, the daemon never died.
s1=$(size_of state-0); c1=$(size_of content-0)
log "after: state-0 $((s1 >> 20)) MiB, content-0 $((c1 >> 20)) MiB"
[ "$s1" -gt "$s0" ] || [ "$c1" -gt "$c0" ] || fail "no volume grew under 1 GB of work on 1.5 GiB of volumes"
st_json=$(api GET /v1/status)
h=$(jget "$st_json" "d['health']")
[ "$h" != degraded ] || fail "degraded after the work: $st_json"
jget "$st_json" "[p['code'] for p in d['problems']]" | grep -q 'growth' && fail "growth problems: $st_json"
assert_eq 0 "$(jget "$(api GET /v1/workspaces/ws-1)" "d['daemon']['restarts']")" "daemon restarts"
grep -q 'grew from' "$AGENT_LOG" || fail "no grow in the log"
grep 'grew from' "$AGENT_LOG" | sed 's/^<[0-9]>/  /' >&2

# rm -rf of everything (the clone too), then the sweep gives the content
# pool back.
used_before=$(jget "$(api GET /v1/volumes/content-0)" "d['used_bytes']")
rm -rf "${m:?}"/*
sync -f "$m"
# The objects are fresh; the default grace (1 h) would keep them: age them
# as an hour would.
find "$WORK/host/layoutd/volumes/content-0/objects" -type f -exec touch -m -d '2 hours ago' {} +
"$LAYOUTCTL" --socket "$SOCK" gc >"$WORK/gc.txt" || fail "gc: $(cat "$WORK/gc.txt")"
log "$(cat "$WORK/gc.txt")"
dropped() { [ "$(jget "$(api GET /v1/volumes/content-0)" "d['used_bytes']")" -lt $((used_before / 5)) ]; }
wait_for 30 dropped || fail "the content pool kept its space after rm -rf and a sweep: $(api GET /v1/volumes/content-0)"
log "OK: content-0 used $((used_before >> 20)) MiB -> $(( $(jget "$(api GET /v1/volumes/content-0)" "d['used_bytes']") >> 20 )) MiB after the sweep"
