# Per-workspace quotas enforced by the kernel (Debian's kernel has XFS
# quotas; the CI host's has not, where tests/agent/test-agent-quota.sh
# proves the refusal): a loop-xfs state volume mounted with prjquota, two
# workspaces on it, one with a 64 MiB quota. Its usage and the 90 % alert
# show up; its writer hits the limit while its neighbour on the
# same volume keeps writing; `layoutctl quota` raises the limit online and
# the writer goes on. The workspace's cache (workspace.cache) is in its
# project: what is written there counts. The packaged agent and daemon,
# the real socket.
# XFS reports a project quota's limit as ENOSPC, not EDQUOT (a project is
# a directory tree that looks full; xfs_trans_dqresv), and layoutd-wsfs
# passes it on unchanged: that is what the writer must see.
. "$LAYOUTD_VM_HOME/guest/lib.sh"
command -v layoutctl >/dev/null || skip "layoutctl not installed"
command -v jq >/dev/null || fail "jq missing in the guest (tests/vm/guest-packages)"
[ -e /proc/fs/xfs/xqm ] || modprobe xfs 2>/dev/null || true
data_mount
root=/srv/data/quota-root
sock=/run/layoutd-quota.sock
T0=$SECONDS
step() { log "[$((SECONDS - T0))s] $*"; }
lc() { layoutctl --socket "$sock" "$@"; }
get() { curl -sSf --max-time 60 --unix-socket "$sock" "http://localhost$1" || fail "GET $1 failed"; }
wait_for() {
    local limit=$1 what=$2; shift 2
    local end=$((SECONDS + limit))
    until "$@" >/dev/null 2>&1; do
        [ $SECONDS -lt $end ] || { tail -n 20 agent.log; fail "timed out after ${limit}s waiting for: $what"; }
        sleep 1
    done
}
cat >/tmp/quota.yaml <<YAML
version: 1
root: $root
pools:
  state:
    backend: loop-xfs
    volume_size: 512MiB
    min_volumes: 1
    max_volumes: 1
    workspaces_per_volume: 2
  content:
    backend: loop-ext4
    volume_size: 512MiB
workspace:
  command: [/usr/libexec/layoutd/layoutd-wsfs, --state, "{state_dir}", --content, "{content_dirs}", "{mountpoint}"]
  mount_root: $root/mnt
  package_store: true
  cache: true
api:
  socket: $sock
  flush_probe_interval: 1s
YAML
on_exit "lc shutdown --stop-workspaces >/dev/null 2>&1; sleep 2; kill \$(cat agent.pid 2>/dev/null) 2>/dev/null;
         layoutctl teardown --layout /tmp/quota.yaml --destroy-data --remove-workspaces >/dev/null 2>&1; true"

step "the agent on a loop-xfs state pool"
layoutd --layout /tmp/quota.yaml >agent.log 2>&1 &
echo $! >agent.pid
ready() { curl -sSf --max-time 5 --unix-socket "$sock" http://localhost/v1/status | jq -e '.state == "ready"'; }
wait_for 120 "the agent ready" ready || { tail -n 30 agent.log; fail "the agent did not come up"; }
findmnt -n -o OPTIONS "$root/volumes/state-0" | tee opts.out
grep -qw prjquota opts.out || fail "state-0 is not mounted with prjquota: $(cat opts.out)"
q=$(get /v1/status | jq -c .quotas)
log "status quotas: $q"
[ "$(jq -r .supported <<<"$q")" = true ] || fail "quotas not supported in the guest: $q"

step "two workspaces on state-0, one with a 64 MiB quota"
lc add wq --quota 64M --wait 120 || fail "layoutctl add --quota"
lc add wn --wait 120 || fail "layoutctl add (the neighbour)"
w=$(get /v1/workspaces/wq)
[ "$(jq -r .volume <<<"$w")" = "$(get /v1/workspaces/wn | jq -r .volume)" ] || fail "the two are not neighbours"
[ "$(jq -r .quota.enforced_by <<<"$w")" = xfs-project ] || fail "quota not enforced: $(jq -c .quota <<<"$w")"
[ "$(jq -r .quota.limit_bytes <<<"$w")" = $((64 << 20)) ] || fail "limit: $(jq -c .quota <<<"$w")"
proj=$(jq -r .quota.project_id <<<"$w")
xfs_io -c 'lsproj' "$root/volumes/state-0/workspaces/wq" | tee lsproj.out
grep -q "projid = $proj" lsproj.out || fail "the state directory is not in project $proj"
# The package store's files count against no workspace's quota: a
# workspace with one gets no store; its neighbour without one does.
[ "$(jq -r .package_store <<<"$w")" = null ] || fail "a workspace with a quota got a package store: $(jq -c .package_store <<<"$w")"
[ -d "$root/mnt/wq/.layoutd-store" ] && fail "a workspace with a quota shows a package store"
[ "$(get /v1/workspaces/wn | jq -r .package_store)" = "$root/mnt/wn/.layoutd-store" ] || fail "the neighbour has no package store"
[ -d "$root/mnt/wn/.layoutd-store" ] || fail "the neighbour's mount shows no package store"

step "the cache is in the workspace's project, and what is written there counts against its quota"
[ "$(jq -r .cache.state <<<"$w")" = mounted ] || fail "wq's cache is not mounted: $(jq -c .cache <<<"$w")"
xfs_io -c 'lsproj' "$root/volumes/state-0/derived/wq" | tee lsproj-cache.out
grep -q "projid = $proj" lsproj-cache.out || fail "the cache is not in project $proj"
before=$(get /v1/workspaces/wq | jq -r '.quota.used_bytes // 0')
dd if=/dev/urandom of="$root/mnt/wq/.layoutd-cache/blob" bs=1M count=16 conv=fsync 2>/dev/null || fail "cannot write into the cache"
cache_counted() { [ "$(get /v1/workspaces/wq | jq -r '.quota.used_bytes // 0')" -ge $((before + (15 << 20))) ]; }
wait_for 30 "the cache's 16 MiB in wq's usage" cache_counted
rm -f "$root/mnt/wq/.layoutd-cache/blob"
sync -f "$root/mnt/wq/.layoutd-cache"

step "small files (below the daemon's 64 KiB pool threshold: they stay on the state volume) to past 90 %"
mkdir "$root/mnt/wq/small"
for i in $(seq 1 1010); do head -c 61440 /dev/urandom >"$root/mnt/wq/small/f$i" || break; done
sync -f "$root/mnt/wq/small/f1"
used_past() { [ "$(get /v1/workspaces/wq | jq -r '.quota.used_bytes // 0')" -ge "$1" ]; }
wait_for 30 "usage read back (>= 58 MiB)" used_past $((58 << 20))
log "usage: $(get /v1/workspaces/wq | jq -c .quota)"
near() { get /v1/status | jq -e '.problems[] | select(.code == "quota-near-limit" and .workspace == "wq")'; }
wait_for 30 "the quota-near-limit problem" near
get /metrics | has 'layoutd_workspace_quota_used_bytes{workspace="wq"}' || fail "no quota metric"

step "the writer hits the limit (ENOSPC from XFS); its neighbour writes on"
if dd if=/dev/zero of="$root/mnt/wq/big" bs=1M count=32 conv=fsync 2>dd.err; then
    fail "32 MiB more went past a 64 MiB quota"
fi
cat dd.err
grep -q "No space left on device" dd.err || fail "the writer did not get XFS's project-quota ENOSPC: $(cat dd.err)"
df -B1 --output=avail "$root/volumes/state-0" | tail -n1 | tee avail.out
[ "$(cat avail.out)" -gt $((300 << 20)) ] || fail "the volume itself is nearly full: the ENOSPC proves nothing"
dd if=/dev/urandom of="$root/mnt/wn/big" bs=1M count=100 conv=fsync 2>dn.err || { cat dn.err; fail "the neighbour could not write"; }
[ "$(stat -c %s "$root/mnt/wq/small/f7")" = 61440 ] && cat "$root/mnt/wq/small/f7" >/dev/null ||
    fail "a file written below the quota cannot be read"

step "layoutctl quota raises it online"
rm -f "$root/mnt/wq/big"
lc quota wq 256M --wait 60 || fail "layoutctl quota"
[ "$(get /v1/workspaces/wq | jq -r .quota_bytes)" = $((256 << 20)) ] || fail "quota_bytes not changed"
dd if=/dev/zero of="$root/mnt/wq/big" bs=1M count=32 conv=fsync 2>dd2.err || { cat dd2.err; fail "still refused after the raise"; }

step "a first quota for a workspace whose daemon has a package store is refused"
lc quota wn 64M --wait 60 >quota-wn.out 2>&1 && fail "a quota was set on a workspace with a package store"
grep -q "package store" quota-wn.out || fail "the refusal does not name the store: $(cat quota-wn.out)"
[ "$(get /v1/workspaces/wn | jq -r .quota_bytes)" = 0 ] || fail "the refused quota was recorded"
[ -d "$root/mnt/wn/.layoutd-store" ] || fail "the refused quota took the store away"

step "removing a quota is allowed; the running daemon gets no store until its restart"
store_of() { get "/v1/workspaces/$1" | jq -r .package_store; }
lc quota wq 0 --wait 60 || fail "removing wq's quota"
[ "$(get /v1/workspaces/wq | jq -r .quota_bytes)" = 0 ] || fail "quota_bytes not 0 after the removal"
[ "$(store_of wq)" = null ] || fail "wq's JSON names a store its running daemon was not started with"
step "a quota again before the restart: allowed, and the restart then gets no store"
lc quota wq 256M --wait 60 || fail "a quota again on wq, whose daemon still has no store"
lc restart wq || fail "restart wq"
[ "$(store_of wq)" = null ] || fail "wq restarted with a quota and a store"
[ -e "$root/mnt/wq/.layoutd-store" ] && fail "wq's mount shows a store with a quota"
step "an agent killed in the middle of a quota change completes it at its next start"
# The change is written ahead: the record says which limit is being set
# before the kernel is asked. Killing the agent between the two is what
# the record then looks like: wq at 256M, a change to 48M pending (below
# what wq uses, so the kernel's limit shows at the next write).
kill -KILL "$(cat agent.pid)"
wait "$(cat agent.pid)" 2>/dev/null || true
rec=$root/layoutd-state.json
# sed, not jq: bookworm's jq 1.6 rounds the record's 64-bit hashes.
sed -i "s/\"id\": *\"wq\" *,/&\"quota_pending\": $((48 << 20)),/" "$rec"
grep -q "\"quota_pending\": $((48 << 20))" "$rec" || fail "cannot edit the record: $(grep -n '"wq"' "$rec")"
layoutd --layout /tmp/quota.yaml >>agent.log 2>&1 &
echo $! >agent.pid
wait_for 120 "the agent ready again" ready
done_48() { get /v1/workspaces/wq | jq -e ".quota_bytes == $((48 << 20)) and .quota.pending_bytes == null"; }
wait_for 60 "the interrupted change to 48M completed" done_48 || fail "wq: $(get /v1/workspaces/wq | jq -c .quota)"
grep -q "completing the change of its quota" agent.log || fail "the completion is not logged"
saved() { ! grep -q '"quota_pending"' "$rec"; }
wait_for 30 "the record saying the change is over" saved
# The kernel holds the new limit: wq uses more than 48M, so a write fails.
if dd if=/dev/zero of="$root/mnt/wq/over" bs=1M count=4 conv=fsync 2>dd3.err; then
    fail "wq wrote past the 48M limit the completed change set"
fi
grep -q "No space left on device" dd3.err || fail "the write past the limit failed otherwise: $(cat dd3.err)"
rm -f "$root/mnt/wq/over"
[ "$(store_of wq)" = null ] || fail "wq's daemon has a store with a quota"

step "an agent killed while the kernel is being asked: the record held the change first"
# Above, the intent was edited in by hand; here the agent writes it. A
# frozen volume holds quotactl's change (the kernel waits for the thaw), so
# the job stops between the intent and the kernel. The record must then
# already hold the intent; the agent is killed there, the volume thawed
# (the limit may land then: the killed worker's system call finishes),
# and the next agent must end with record and kernel at 96M either way.
vol=$root/volumes/state-0
kernel_limit() { timeout 20 xfs_quota -x -c "quota -p -b -N $proj" "$vol" | awk '{ print $4 }'; }
[ "$(kernel_limit)" = $((48 << 10)) ] || fail "the kernel's limit before: $(xfs_quota -x -c "quota -p -b -N $proj" "$vol")"
on_exit "fsfreeze -u '$vol' 2>/dev/null"
fsfreeze -f "$vol" || fail "cannot freeze $vol"
lc quota wq 96M --wait 120 >quota-frozen.out 2>&1 &
lcpid=$!
pending_96() { grep -q "\"quota_pending\": $((96 << 20))" "$rec"; }
wait_for 30 "the intent to 96M saved while the volume is frozen" pending_96
sleep 2
[ "$(kernel_limit)" = $((48 << 10)) ] || fail "the kernel changed its limit through a frozen volume"
grep -q "\"quota\": $((48 << 20))" "$rec" || fail "the record's quota moved before the kernel's: $(grep -n '"wq"' "$rec")"
kill -KILL "$(cat agent.pid)"
fsfreeze -u "$vol" || fail "cannot thaw $vol"
wait "$(cat agent.pid)" 2>/dev/null || true
# The client lost its agent: it would retry a refused connection for up
# to its --wait; this test starts the next agent itself.
kill "$lcpid" 2>/dev/null || true
wait "$lcpid" 2>/dev/null || true
log "layoutctl quota, cut off by the kill: $(tr '\n' ' ' <quota-frozen.out)"
layoutd --layout /tmp/quota.yaml >>agent.log 2>&1 &
echo $! >agent.pid
wait_for 120 "the agent ready again" ready
done_96() { get /v1/workspaces/wq | jq -e ".quota_bytes == $((96 << 20)) and .quota.pending_bytes == null"; }
wait_for 60 "the killed change to 96M completed" done_96 || fail "wq: $(get /v1/workspaces/wq | jq -c .quota)"
wait_for 30 "the record saying the change is over" saved
[ "$(kernel_limit)" = $((96 << 10)) ] || fail "the kernel's limit after: $(xfs_quota -x -c "quota -p -b -N $proj" "$vol")"
[ "$(store_of wq)" = null ] || fail "wq's daemon has a store with a quota"

step "a removed quota gives the store at the next start; a first quota is then refused"
lc quota wq 0 --wait 60 || fail "removing wq's quota again"
lc restart wq || fail "restart wq again"
[ "$(store_of wq)" = "$root/mnt/wq/.layoutd-store" ] || fail "wq got no store at its start without a quota"
[ -d "$root/mnt/wq/.layoutd-store" ] || fail "wq's mount shows no store"
lc quota wq 64M --wait 60 >quota-wq.out 2>&1 && fail "a first quota was set on wq, whose daemon has a store"
grep -q "package store" quota-wq.out || fail "the refusal does not name the store: $(cat quota-wq.out)"
step "done"
