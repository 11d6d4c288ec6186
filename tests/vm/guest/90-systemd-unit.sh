# The systemd unit as an operator runs it, after the .deb is installed:
# group and conffile from the package, a vdo-xfs layout in
# /etc/layoutd/layouts.d, `systemctl start` (Type=notify, STATUS, watchdog),
# workspaces through the API with the packaged reference daemon
# (layoutd-wsfs), each in its own systemd scope with the layout's limits,
# a daemon's writes charged to its scope down to the disk under the images
# (and an io.max set there holding them), their lines in the journal with
# LAYOUTD_WORKSPACE=, an ext4 state volume growing online under a writer
# (the unit has CAP_SYS_RESOURCE), VDO
# savings and fstrim seen through the API and the log, reload with a
# broken layout (its MESSAGE_ID in the journal), an OOM-killed daemon that
# leaves the unit active and comes back, `systemctl restart` and a package
# upgrade that keep every daemon (re-adoption), `layoutctl shutdown
# --stop-workspaces`, re-activation after a reboot-like loss of every
# mount, loop and dm device, a clean stop, and teardown of what is left.
. "$LAYOUTD_VM_HOME/guest/lib.sh"
systemctl cat layoutd.service >/dev/null 2>&1 || skip "layoutd.service not installed by the package"
command -v jq >/dev/null || fail "jq missing in the guest (tests/vm/guest-packages)"
data_mount

unit=layoutd.service
root=/srv/data/sd-root
layouts=/etc/layoutd/layouts.d
sock=/run/layoutd/api.sock
T0=$SECONDS
step() { log "[$((SECONDS - T0))s] $*"; }
api() { curl -sS --max-time 60 --unix-socket "$sock" "$@"; }
# get PATH: the JSON body; fails the test on a non-2xx answer
get() { api -f "http://localhost$1" || fail "GET $1 failed"; }
prop() { systemctl show -P "$1" "$unit"; }
# wait_for SECONDS DESCRIPTION COMMAND...: poll a condition, bounded
wait_for() {
    local limit=$1 what=$2; shift 2
    local end=$((SECONDS + limit))
    until "$@" >/dev/null 2>&1; do
        [ $SECONDS -lt $end ] || fail "timed out after ${limit}s waiting for: $what"
        sleep 1
    done
}
ws_state() { get "/v1/workspaces/$1" | jq -r .daemon.state; }
ws_pid() { get "/v1/workspaces/$1" | jq -r .daemon.pid; }
ws_running() { [ "$(ws_state "$1")" = running ]; }
all_running() { for w in ws-1 ws-2 ws-3; do ws_running $w || return 1; done; }
vol() { get /v1/volumes | jq -c ".volumes[] | select(.name == \"$1\")"; }
checksums() { for w in ws-1 ws-2; do (cd "$(get /v1/workspaces/$w | jq -r .mountpoint)" && sha256sum corpus/*); done; }
# FUSE mounts under the layout's root (wsfs mounts as fuse.<name>)
fuse_mounts() { findmnt -rn -o TARGET,FSTYPE | awk -v r="$root/" 'index($1, r) == 1 && $2 ~ /^fuse/ {print $1}'; }
since() { journalctl -u "$unit" --no-pager -o cat --since "@$1"; }

on_exit "systemctl stop layoutd.socket 2>/dev/null; layoutctl shutdown --stop-workspaces >/dev/null 2>&1; systemctl stop $unit 2>/dev/null;
         pkill -x layoutd-wsfs 2>/dev/null; sleep 1; layoutctl teardown --layout $layouts/vm.yaml >/dev/null 2>&1;
         for m in \$(findmnt -rn -o TARGET | grep '^$root/' | sort -r); do umount -l \$m; done;
         dmsetup remove layoutd-content-0 2>/dev/null;
         for f in $root/images/*.img; do losetup -j \$f | cut -d: -f1 | xargs -r -n1 losetup -d; done;
         rm -f $layouts/vm.yaml; [ -f /root/default.yaml.orig ] && mv /root/default.yaml.orig $layouts/default.yaml; true"

# ---- what the package set up ---------------------------------------------
step "package: unit, group, conffile"
# --man=no: verify runs man(1) for each man: page of Documentation=, and
# this minimal guest has no man-db; the pages themselves are checked below,
# as files the package installed.
systemd-analyze verify --man=no /lib/systemd/system/layoutd.service /lib/systemd/system/layoutd.socket ||
    fail "systemd-analyze verify failed"
docs=$(systemctl show -p Documentation --value layoutd.service)
[ -n "$docs" ] || fail "layoutd.service names no Documentation="
for d in $docs; do
    d=${d//\"/} # systemctl show quotes each entry
    case $d in
        man:*\(*\))
            page=${d#man:}; name=${page%(*}; sect=${page#*(}; sect=${sect%)}
            compgen -G "/usr/share/man/man$sect/$name.$sect*" >/dev/null ||
                fail "Documentation=$d, but the package installed no /usr/share/man/man$sect/$name.$sect*" ;;
        file:*) [ -f "${d#file:}" ] || fail "Documentation=$d, but the package installed no ${d#file:}" ;;
        *) fail "Documentation=$d is neither a man page nor a file the package installs" ;;
    esac
done
getent group layoutd || fail "group layoutd missing (postinst: systemd-sysusers)"
[ -d /run/layoutd ] || fail "/run/layoutd missing (postinst: systemd-tmpfiles)"
dpkg-query -W -f='${Conffiles}\n' layoutd | tee conffiles.out
grep -q '/etc/layoutd/layouts.d/default.yaml' conffiles.out || fail "default.yaml is not a conffile"
[ -f $layouts/default.yaml ] || fail "no default layout installed"
[ "$(prop UnitFileState)" = disabled ] || log "NOTE: unit file state $(prop UnitFileState)"

# ---- the operator's layout: xfs-vdo.yaml scaled down to the VM -------------
step "layout: loop-ext4 state (2 per volume), vdo-xfs content"
mv $layouts/default.yaml /root/default.yaml.orig   # the agent loads exactly one *.yaml
cat >$layouts/vm.yaml <<YAML
version: 1
root: $root
pools:
  state:
    backend: loop-ext4
    volume_size: 256MiB
    min_volumes: 1
    max_volumes: 4
    workspaces_per_volume: 2
    direct_io: true
    # ext4 grows online here: the unit has CAP_SYS_RESOURCE.
    growth: {threshold: 60%, step: double, max_size: 1GiB, host_reserve: 1GiB}
  content:
    backend: vdo-xfs
    volume_size: 6GiB
    shards: 1
    direct_io: true
    mount_options: noatime
    vdo:
      logical_size: 16GiB
      fstrim_interval: 1min
workspace:
  command: [/usr/libexec/layoutd/layoutd-wsfs, --state, "{state_dir}", --content, "{content_dirs}", "{mountpoint}"]
  resources: {memory_max: 512MiB, memory_high: 384MiB, cpu_weight: 50, io_weight: 50, tasks_max: 512}
api:
  socket: $sock
  group: layoutd
  socket_mode: "0660"
  flush_probe_interval: 30s
YAML
cp $layouts/vm.yaml /root/vm.yaml.good
layoutctl validate $layouts || fail "layoutctl validate refused the layout directory"

# ---- start: Type=notify, STATUS, watchdog -----------------------------------
step "systemctl start"
ts_start=$(date +%s)
systemctl start $unit || { journalctl -u $unit --no-pager | tail -n 40; fail "systemctl start failed"; }
[ "$(systemctl is-active $unit)" = active ] || fail "not active after start"
status=$(prop StatusText)
log "StatusText: $status"
case "$status" in Ready:*) ;; *) fail "StatusText is not the agent's Ready line: $status" ;; esac
wd=$(prop WatchdogUSec)
log "WatchdogUSec: $wd"
[ -n "$wd" ] && [ "$wd" != 0 ] && [ "$wd" != infinity ] || fail "no watchdog configured"
pid0=$(prop MainPID)
# The agent must share the host's mount namespace, or its volumes and FUSE
# mounts are invisible to everyone else (several Protect*= settings imply a
# private one).
[ "$(readlink /proc/$pid0/ns/mnt)" = "$(readlink /proc/1/ns/mnt)" ] ||
    fail "the agent runs in its own mount namespace: its mounts are invisible to the host"
[ "$(stat -c %G $sock)" = layoutd ] || fail "socket group is $(stat -c %G $sock), not layoutd"
# The unit wants its socket: systemd holds it, the agent took it.
[ "$(systemctl is-active layoutd.socket)" = active ] || fail "layoutd.socket is not active with the service"
since "$ts_start" | has 'API listening on /run/layoutd/api.sock (the socket systemd passed)' ||
    fail "the agent did not take the socket systemd holds"
get /v1/status | tee status.json | jq .
[ "$(jq -r .state status.json)" = ready ] || fail "status state is $(jq -r .state status.json), not ready"

step "volumes"
get /v1/volumes >volumes.json
jq -c '.volumes[] | {name, state, health, mounted, direct_io, fs_type, vdo: (.vdo | if . then {mode, saving_percent} else null end)}' volumes.json
[ "$(vol content-0 | jq -r .mounted)" = true ] || fail "content-0 not mounted: $(vol content-0)"
[ "$(vol content-0 | jq -r .health)" = ok ] || fail "content-0 health: $(vol content-0)"
[ "$(vol content-0 | jq -r .fs_type)" = xfs ] || fail "content-0 fs_type: $(vol content-0 | jq -r .fs_type)"
[ "$(vol content-0 | jq -r .vdo.mode)" = normal ] || fail "content-0 vdo mode: $(vol content-0 | jq -c .vdo)"
dm=$(dmsetup info -c --noheadings -o major,minor --separator : layoutd-content-0 | tr -d ' ')
[ "$(findmnt -n -o MAJ:MIN "$root/volumes/content-0" | tr -d ' ')" = "$dm" ] ||
    fail "content-0 is not mounted from dm-vdo $dm: $(findmnt -n -o SOURCE,MAJ:MIN "$root/volumes/content-0")"
[ "$(vol state-0 | jq -r .state)" = up ] || fail "state-0: $(vol state-0)"

# ---- workspaces through the API, with the packaged daemon ------------------
step "workspaces: create ws-1..3 (the third carves state-1)"
for w in ws-1 ws-2 ws-3; do
    code=$(api -o "create-$w.json" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
               -d "{\"id\": \"$w\", \"labels\": {\"suite\": \"vm\"}}" http://localhost/v1/workspaces)
    [ "$code" = 201 ] || fail "create $w: HTTP $code $(cat "create-$w.json")"
done
wait_for 90 "three workspace daemons running" all_running
get /v1/workspaces | jq -c '.workspaces[] | {id, volume, flush_scope, mountpoint, daemon: .daemon.state, pid: .daemon.pid}'
[ "$(get /v1/workspaces/ws-3 | jq -r .volume)" = state-1 ] || fail "ws-3 not on a carved state-1"
[ "$(vol state-0 | jq -r .flush_scope)" = 2 ] || fail "state-0 flush scope is not 2"
[ "$(fuse_mounts | wc -l)" -ge 3 ] || { findmnt -rn -o TARGET,FSTYPE | grep "$root" ; fail "fewer than 3 FUSE mounts"; }

step "write a corpus through ws-1 and ws-2"
corpus=$(find /usr/lib/x86_64-linux-gnu -maxdepth 1 -type f -size +200k | sort | head -n 24)
for w in ws-1 ws-2; do
    m=$(get /v1/workspaces/$w | jq -r .mountpoint)
    mkdir "$m/corpus"
    # shellcheck disable=SC2086
    cp $corpus "$m/corpus/"
    sync -f "$m/corpus"
done
checksums >sums.before
log "corpus: $(echo "$corpus" | wc -l) files, $(du -ch $corpus | tail -n1 | cut -f1) per workspace"

step "each daemon in its own scope, with the layout's limits"
[ "$(get /v1/status | jq -r .cgroups.enabled)" = true ] || fail "cgroups not enabled: $(get /v1/status | jq -c .cgroups)"
# The root is not the default one, so the scope names carry its hash.
scope_of() { get "/v1/workspaces/$1" | jq -r .cgroup.unit; }
for w in ws-1 ws-2 ws-3; do
    p=$(ws_pid $w)
    cg=$(sed -n 's/^0:://p' /proc/$p/cgroup)
    case "$(scope_of $w)" in layoutd-ws-*-"$w".scope) ;; *) fail "$w's scope is named $(scope_of $w)" ;; esac
    [ "$cg" = "/layoutd.slice/$(scope_of $w)" ] || fail "$w's daemon (pid $p) is in $cg, not its scope $(scope_of $w)"
done
sc=/sys/fs/cgroup/layoutd.slice/$(scope_of ws-1)
[ "$(cat $sc/memory.max)" = 536870912 ] || fail "memory.max of ws-1: $(cat $sc/memory.max)"
[ "$(cat $sc/memory.high)" = 402653184 ] || fail "memory.high of ws-1: $(cat $sc/memory.high)"
[ "$(cat $sc/pids.max)" = 512 ] || fail "pids.max of ws-1: $(cat $sc/pids.max)"
[ "$(cat $sc/cpu.weight)" = 50 ] || fail "cpu.weight of ws-1: $(cat $sc/cpu.weight)"
grep -qx 'default 50' $sc/io.weight || fail "io.weight of ws-1 is not the layout's 50: $(cat $sc/io.weight 2>&1)"
[ "$(systemctl show -P IOWeight "$(scope_of ws-1)")" = 50 ] || fail "the scope unit's IOWeight"
[ "$(systemctl show -P MemoryMax "$(scope_of ws-1)")" = 536870912 ] || fail "the scope unit's MemoryMax"
has_figures() { [ "$(get /v1/workspaces/ws-1 | jq -r '.cgroup.memory_bytes // 0')" -gt 0 ]; }
wait_for 30 "ws-1's cgroup figures in the API" has_figures
get /v1/workspaces/ws-1 | jq -c .cgroup
api http://localhost/metrics | grep -E '^layoutd_workspace_(cpu_seconds_total|memory_bytes)\{workspace="ws-1"\}' ||
    fail "no cgroup metrics for ws-1"
log "RESULT scopes=3 memory_max=512MiB cpu_weight=50 io_weight=50 tasks_max=512"

step "I/O: a daemon's writes are charged to its scope down to the disk under the images"
# Why this matters (issue 21): the loop volumes share the disk under their
# images, so an I/O weight or limit must follow a workspace's writes
# through its daemon, the state volume's writeback, the loop device's
# worker and the direct I/O on the image, or it bounds nothing. cgroup
# writeback charges the daemon's dirty pages to its scope; the loop driver
# submits the image I/O in the scope's name (direct I/O since 4.14, with
# one worker per cgroup since 5.14).
loopdev=$(findmnt -n -o MAJ:MIN "$root/volumes/state-0" | tr -d ' ') || fail "findmnt of state-0"
case "$loopdev" in 7:*) ;; *) fail "state-0 is not on a loop device: $loopdev" ;; esac
imgsrc=$(findmnt -n -o SOURCE -T "$root/images") || fail "findmnt of $root/images"
disk=/dev/$(lsblk -no PKNAME "$imgsrc" 2>/dev/null | head -n1)
[ "$disk" != /dev/ ] || disk=$imgsrc
diskdev=$(lsblk -dno MAJ:MIN "$disk" | tr -d ' ') || fail "lsblk of $disk"
# wbytes DEV: what ws-1's scope has written to DEV so far
wbytes() { awk -v d="$1" '$1 == d { for (i = 2; i <= NF; i++) if ($i ~ /^wbytes=/) { sub(/^wbytes=/, "", $i); print $i } }' $sc/io.stat | grep . || echo 0; }
m1=$(get /v1/workspaces/ws-1 | jq -r .mountpoint)
# io_write MiB: write that much into ws-1 in 48 KiB pieces (they stay on
# the state volume) and make it durable; io_ms: the milliseconds it took
io_write() {
    local t0
    rm -rf "$m1/iotest" && mkdir "$m1/iotest" && sync -f "$root/volumes/state-0" || fail "preparing $m1/iotest"
    t0=$(date +%s%N)
    head -c "$1M" /dev/urandom | (cd "$m1/iotest" && split -b 48k - part.) || fail "writing $1 MiB into ws-1"
    sync -f "$m1/iotest" && sync -f "$root/volumes/state-0" || fail "syncing ws-1's $1 MiB"
    io_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
}
l0=$(wbytes "$loopdev"); d0=$(wbytes "$diskdev")
io_write 32; ms_free=$io_ms
l1=$(wbytes "$loopdev"); d1=$(wbytes "$diskdev")
log "ws-1 wrote 32 MiB in $ms_free ms: its scope's io.stat wbytes +$((l1 - l0)) on the loop device $loopdev, +$((d1 - d0)) on $disk ($diskdev)"
[ $((l1 - l0)) -ge $((30 << 20)) ] || fail "the state volume's writeback was not charged to ws-1's scope: $(cat $sc/io.stat)"
[ $((d1 - d0)) -ge $((30 << 20)) ] || fail "the loop worker's writes to $disk were not charged to ws-1's scope: $(cat $sc/io.stat)"
# So a limit on the scope bounds the workspace on the shared disk. The
# agent has no layout key for io.max; an operator sets it on the scope,
# naming the images' directory as docs/operations.md says (systemd finds
# the disk under it).
systemctl set-property --runtime "$(scope_of ws-1)" "IOWriteBandwidthMax=$root/images 1048576" ||
    fail "systemctl set-property IOWriteBandwidthMax on ws-1's scope"
capped() { grep -q "^$diskdev .*wbps=1048576" $sc/io.max; }
wait_for 10 "io.max of ws-1 to hold the limit" capped
d2=$(wbytes "$diskdev")
io_write 12; ms_capped=$io_ms
d3=$(wbytes "$diskdev")
systemctl set-property --runtime "$(scope_of ws-1)" "IOWriteBandwidthMax=" || fail "clearing IOWriteBandwidthMax"
io_write 12; ms_free12=$io_ms
rm -rf "$m1/iotest"
log "ws-1 wrote 12 MiB in $ms_capped ms with wbps 1 MiB/s on $disk, in $ms_free12 ms without (32 MiB: $ms_free ms)"
[ $((d3 - d2)) -ge $((12 << 20)) ] || fail "the capped write did not reach $disk through ws-1's scope: +$((d3 - d2)) bytes"
# 12 MiB cannot be durable in under 12 s at 1 MiB/s (9 s leaves room for
# the throttle's first slice); the same write without the limit, timed
# right after it, must take well under half that, or the machine is too
# slow for the time to say anything.
[ "$ms_capped" -ge 9000 ] || fail "the io.max limit on ws-1's scope did not hold its writes: 12 MiB in $ms_capped ms"
[ "$ms_capped" -ge $((2 * ms_free12)) ] ||
    fail "12 MiB took $ms_capped ms with the limit and $ms_free12 ms without: the limit is not what slowed it"
# io.weight acts only where a policy reads it: blk-iocost, off until
# io.cost.qos enables it on the disk, or the BFQ scheduler. Say which.
sched=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/block/"$(basename "$disk")"/queue/scheduler)
qos=$(grep "^$diskdev " /sys/fs/cgroup/io.cost.qos 2>/dev/null | grep -o 'enable=[01]' || echo unset)
log "RESULT io_charge loop=$((l1 - l0)) disk=$((d1 - d0)) bytes for 32 MiB; io_max 1MiB/s: 12 MiB in ${ms_capped} ms (free: ${ms_free12} ms); $disk scheduler=$sched io.cost=$qos"

step "journal: the daemons' lines carry their workspace"
journalctl --no-pager -o cat LAYOUTD_WORKSPACE=ws-1 | tee j-ws1.txt | tail -n 3
grep -q 'serving' j-ws1.txt || fail "journalctl LAYOUTD_WORKSPACE=ws-1 has not the daemon's serving line"
journalctl --no-pager -o verbose LAYOUTD_WORKSPACE=ws-1 SYSLOG_IDENTIFIER=layoutd-wsfs | has 'SYSLOG_PID=' ||
    fail "ws-1's daemon lines are not under the daemon's own name and pid"
journalctl --no-pager -o cat LAYOUTD_VOLUME=state-0 | has 'state-0' || fail "no entry with LAYOUTD_VOLUME=state-0"

step "ext4 state-1 grows online under a writer (ws-3 alone on it)"
m3=$(get /v1/workspaces/ws-3 | jq -r .mountpoint)
size1=$(vol state-1 | jq -r .backing_size_bytes)
head -c 170M /dev/urandom >/root/fill.bin
mkdir "$m3/fill"
# 48 KiB pieces stay in the state volume (below the daemon's CAS threshold).
(cd "$m3/fill" && split -b 48k /root/fill.bin part.) || fail "the writer failed (growth did not keep up): $(vol state-1)"
sync -f "$m3/fill"
grown() { [ "$(vol state-1 | jq -r .backing_size_bytes)" -gt "$size1" ]; }
wait_for 60 "state-1 to grow" grown
[ "$(cat "$m3"/fill/part.* | sha256sum | cut -d' ' -f1)" = "$(sha256sum </root/fill.bin | cut -d' ' -f1)" ] ||
    fail "data differs after the grow"
since "$ts_start" | grep 'grew from' || fail "no grow in the journal"
[ "$(vol state-1 | jq -r .fs_type)" = ext4 ] || fail "state-1 is not ext4"
log "RESULT ext4_growth state-1 $size1 -> $(vol state-1 | jq -r .backing_size_bytes) bytes, size_bytes $(vol state-1 | jq -r .size_bytes), data equal"
rm -rf "$m3/fill" /root/fill.bin

step "VDO savings through GET /v1/volumes"
# The reference daemon keeps one copy of identical content (content
# addressed), so the workspaces' writes leave VDO little to find. Copies
# without reflinks straight onto the content volume are what VDO dedupes.
sync
# GET serves the agent's cached observation: wait for one taken after the sync.
fresh_after() { [ "$(vol "$1" | jq -r '.observed_at // 0')" -gt "$2" ]; }
t=$(date +%s)
wait_for 30 "an observation of content-0 after the writes" fresh_after content-0 "$t"
vol content-0 | jq .vdo >vdo0.json
log "after the workspaces' writes: $(jq -c '{saving_percent, logical_used_bytes, data_used_bytes}' vdo0.json)"
mkdir -p "$root/volumes/content-0/vm-dedup"
for i in 1 2 3; do
    # shellcheck disable=SC2086
    mkdir "$root/volumes/content-0/vm-dedup/$i" && cp --reflink=never $corpus "$root/volumes/content-0/vm-dedup/$i/"
done
sync
t=$(date +%s)
wait_for 30 "an observation of content-0 after the copies" fresh_after content-0 "$t"
vol content-0 | jq .vdo | tee vdo.json
saving=$(jq -r .saving_percent vdo.json)
[ "$saving" -gt 0 ] || fail "VDO saving_percent is $saving after three copies"
# A fresh XFS already shows a high saving (its metadata is mostly zeros),
# so the copies are judged by what they added: three copies of the same
# files must cost well under three copies' worth of data blocks.
dlog=$(( $(jq -r .logical_used_bytes vdo.json) - $(jq -r .logical_used_bytes vdo0.json) ))
ddata=$(( $(jq -r .data_used_bytes vdo.json) - $(jq -r .data_used_bytes vdo0.json) ))
log "three copies: logical +$dlog bytes, data +$ddata bytes"
[ "$dlog" -gt 0 ] || fail "the copies mapped no logical blocks"
[ $((ddata * 4)) -lt $((dlog * 3)) ] || fail "VDO did not deduplicate the copies: data +$ddata for logical +$dlog"
[ "$(jq -r .physical_total_bytes vdo.json)" -gt 0 ] || fail "physical_total_bytes missing"
[ "$(jq -r .logical_used_bytes vdo.json)" -gt "$(jq -r .physical_used_bytes vdo.json)" ] ||
    log "NOTE: logical used does not exceed physical used (VDO metadata is a fixed cost)"
log "RESULT vdo_saving_percent=$saving copies_saving_percent=$(( (dlog - ddata) * 100 / dlog )) logical_used=$(jq -r .logical_used_bytes vdo.json)" \
    "data_used=$(jq -r .data_used_bytes vdo.json) physical_used=$(jq -r .physical_used_bytes vdo.json)"
api http://localhost/metrics >metrics.txt
grep -E '^layoutd_vdo_' metrics.txt
grep -q '^layoutd_vdo_saving_ratio{volume="content-0"} 0\.[0-9]*[1-9]' metrics.txt || fail "no saving ratio > 0 in /metrics"
grep -q '^layoutd_vdo_mode{volume="content-0",mode="normal"} 1' metrics.txt || fail "layoutd_vdo_mode normal is not 1"
grep -q '^layoutd_vdo_physical_used_bytes{volume="content-0"}' metrics.txt || fail "no physical used in /metrics"

step "periodic fstrim (vdo.fstrim_interval 1min) runs as a child and is logged"
fstrim_done() { since "$ts_start" | has 'fstrim done'; }
wait_for 180 "the agent's periodic fstrim of content-0" fstrim_done
since "$ts_start" | grep 'fstrim' | tail -n 3
[ "$(vol content-0 | jq -r .vdo.fstrim.runs)" -ge 1 ] || fail "fstrim runs not counted in the API"
rm -rf "$root/volumes/content-0/vm-dedup"

step "watchdog: still active past WatchdogSec, same main pid, no restarts"
[ $(( $(date +%s) - ts_start )) -gt 30 ] || fail "the test ran less than WatchdogSec"
[ "$(systemctl is-active $unit)" = active ] || fail "not active after the watchdog period"
[ "$(prop MainPID)" = "$pid0" ] || fail "main pid changed from $pid0 to $(prop MainPID) (watchdog restart?)"
[ "$(prop NRestarts)" = 0 ] || fail "NRestarts=$(prop NRestarts)"
log "RESULT watchdog=$wd uptime=$(( $(date +%s) - ts_start ))s main_pid=$pid0 restarts=0"

# ---- reload ----------------------------------------------------------------
step "systemctl reload with a broken layout fails (ExecReload=layoutctl reload); the old one keeps running"
pids_before=$(for w in ws-1 ws-2 ws-3; do ws_pid $w; done | tr '\n' ' ')
sed -i 's/workspaces_per_volume: 2/workspaces_per_volume: two/' $layouts/vm.yaml
ts=$(date +%s)
systemctl reload $unit && fail "systemctl reload succeeded with a refused layout"
has_error() { [ "$(get /v1/status | jq -r .last_reload_error)" != null ]; }
wait_for 30 "last_reload_error in /v1/status" has_error
# The reload's own output (layoutctl's error line) is in the unit's journal.
since "$ts" | has 'layoutctl reload: .*workspaces_per_volume' || fail "the failed reload did not say why in the journal"
log "last_reload_error: $(get /v1/status | jq -r .last_reload_error)"
[ "$(systemctl is-active $unit)" = active ] || fail "not active after a refused reload"
[ "$(prop MainPID)" = "$pid0" ] || fail "the agent restarted on reload"
all_running || fail "workspaces not running after a refused reload"
[ "$(for w in ws-1 ws-2 ws-3; do ws_pid $w; done | tr '\n' ' ')" = "$pids_before" ] || fail "daemons changed on a refused reload"
since "$ts" | has 'Reload refused' || fail "no 'Reload refused' in the journal"
journalctl --no-pager -o cat --since "@$ts" MESSAGE_ID=fe7ea5016b2e46ab901613e57f5d2835 | has 'Reload refused' ||
    fail "the refused reload has not its MESSAGE_ID"
cp /root/vm.yaml.good $layouts/vm.yaml
systemctl reload $unit || fail "systemctl reload of the good layout failed"
no_error() { [ "$(get /v1/status | jq -r .last_reload_error)" = null ]; }
wait_for 30 "a good reload to clear last_reload_error" no_error

# ---- OOM ---------------------------------------------------------------------
step "an OOM-killed daemon: the unit stays active, the workspace comes back"
echo 1 >/proc/sys/kernel/sysrq
p2=$(ws_pid ws-2)
r2=$(get /v1/workspaces/ws-2 | jq -r .daemon.restarts)
choom -p "$p2" -n 1000 >/dev/null || fail "choom"
ts=$(date +%s)
echo f >/proc/sysrq-trigger          # the kernel's OOM killer picks the highest score: ws-2's daemon
oom_killed() { journalctl -k --no-pager --since "@$ts" | has "Killed process $p2"; }
wait_for 30 "the OOM killer to kill pid $p2" oom_killed
journalctl -k --no-pager --since "@$ts" | grep "Killed process" | tail -n 1
[ "$(systemctl is-active $unit)" = active ] || fail "the unit is not active after a daemon's OOM kill"
[ "$(prop MainPID)" = "$pid0" ] || fail "the agent was replaced after a daemon's OOM kill"
back() { ws_running ws-2 && [ "$(ws_pid ws-2)" != "$p2" ]; }
wait_for 60 "ws-2 back after its OOM kill" back
[ "$(get /v1/workspaces/ws-2 | jq -r .daemon.restarts)" -gt "$r2" ] || fail "the OOM kill is not counted as a restart"
checksums | cmp -s - sums.before || fail "data differs after the OOM kill"
log "RESULT oom_kill daemon $p2 -> $(ws_pid ws-2), unit active, agent pid $pid0 kept"

# ---- restarts --------------------------------------------------------------
step "systemctl restart: every daemon keeps running and is re-adopted"
pids_before=$(for w in ws-1 ws-2 ws-3; do ws_pid $w; done | tr '\n' ' ')
systemctl restart $unit
[ "$(systemctl is-active $unit)" = active ] || fail "not active after restart"
pid1=$(prop MainPID)
[ "$pid1" != "$pid0" ] || fail "main pid did not change"
wait_for 60 "workspaces running after the restart" all_running
pids_after=$(for w in ws-1 ws-2 ws-3; do ws_pid $w; done | tr '\n' ' ')
[ "$pids_after" = "$pids_before" ] || fail "daemon pids changed across systemctl restart: $pids_before -> $pids_after"
[ "$(get /v1/workspaces/ws-1 | jq -r .daemon.adopted)" = true ] || fail "ws-1 not marked adopted"
for w in ws-1 ws-2 ws-3; do
    [ "$(sed -n 's/^0:://p' /proc/$(ws_pid $w)/cgroup)" = "/layoutd.slice/$(scope_of $w)" ] ||
        fail "$w left its scope across the restart"
done
checksums | cmp -s - sums.before || fail "data differs after the restart"
log "RESULT restart agent_pid $pid0->$pid1 daemon_pids_kept=[$pids_after]"

step "package upgrade (dpkg -i again: postinst configure with the old version): re-adopting restart"
dpkg -i "$LAYOUTD_VM_HOME/layoutd.deb" >dpkg.out 2>&1 || { cat dpkg.out; fail "dpkg -i failed"; }
[ "$(systemctl is-active $unit)" = active ] || fail "not active after the upgrade"
[ "$(prop MainPID)" != "$pid1" ] || fail "postinst did not restart the agent on upgrade"
wait_for 60 "workspaces running after the upgrade" all_running
[ "$(for w in ws-1 ws-2 ws-3; do ws_pid $w; done | tr '\n' ' ')" = "$pids_before" ] || fail "daemon pids changed across the upgrade"
[ ! -e $layouts/default.yaml ] || fail "the upgrade put default.yaml back next to the operator's layout"
cmp -s $layouts/vm.yaml /root/vm.yaml.good || fail "the upgrade changed the operator's layout"
log "RESULT upgrade agent_pid $pid1->$(prop MainPID) daemon_pids_kept=[$pids_before] operator_layout_kept=1"

step "layoutctl shutdown --stop-workspaces: every daemon stops, the unit stays stopped"
layoutctl shutdown --stop-workspaces || fail "layoutctl shutdown --stop-workspaces"
[ "$(systemctl is-active $unit)" != active ] || fail "still active after shutdown"
[ -z "$(fuse_mounts)" ] || fail "FUSE mounts left after a stopping shutdown: $(fuse_mounts)"
for p in $pids_before; do
    [ ! -d /proc/$p ] || [ "$(cat /proc/$p/comm)" != layoutd-wsfs ] || fail "daemon $p survived the shutdown"
done
systemctl start $unit
wait_for 90 "workspaces running after the start" all_running
pids_plain=$(for w in ws-1 ws-2 ws-3; do ws_pid $w; done | tr '\n' ' ')
checksums | cmp -s - sums.before || fail "data differs after the shutdown and start"
log "RESULT shutdown daemon_pids [$pids_before] -> [$pids_plain] (stopped and started again, data kept)"

# ---- reboot-like loss -------------------------------------------------------
step "reboot-like: stop, unmount, dm remove, loop detach; start re-activates without formatting"
uuids=$(get /v1/volumes | jq -r '.volumes[] | "\(.name) \(.uuid)"' | sort)
# A reboot ends the daemons too (systemctl stop alone would keep them).
layoutctl shutdown --stop-workspaces || fail "shutdown before the reboot-like loss"
for m in $(findmnt -rn -o TARGET | grep "^$root/" | sort -r); do umount "$m"; done
dmsetup remove layoutd-content-0
for f in "$root"/images/*.img; do losetup -j "$f" | cut -d: -f1 | xargs -r -n1 losetup -d; done
[ -z "$(findmnt -rn -o TARGET | grep "^$root/")" ] || fail "mounts left before the re-activation"
[ -z "$(losetup -a | grep "$root/images")" ] || fail "loop devices left before the re-activation"
ts=$(date +%s)
systemctl start $unit || fail "start after the loss failed"
[ "$(systemctl is-active $unit)" = active ] || fail "not active after the re-activation"
wait_for 90 "workspaces running after the re-activation" all_running
[ "$(get /v1/volumes | jq -r '.volumes[] | "\(.name) \(.uuid)"' | sort)" = "$uuids" ] || fail "filesystem UUIDs changed"
since "$ts" | grep -E 'volume .*(format |formatted now)' && fail "something was formatted on re-activation"
since "$ts" | has 'create dm-vdo target layoutd-content-0' || fail "content-0's dm-vdo target was not started again"
since "$ts" | has -E 'vdo-format|vdoformat' && fail "content-0 was formatted again on re-activation"
checksums | cmp -s - sums.before || fail "data differs after the re-activation"
log "RESULT reactivation volumes=$(echo "$uuids" | wc -l) formatted=0 checksums=equal"

# ---- stop: nothing left running -----------------------------------------------
step "systemctl stop keeps the workspaces; shutdown --stop-workspaces leaves no FUSE mount, no daemon"
pids_stop=$(for w in ws-1 ws-2 ws-3; do ws_pid $w; done | tr '\n' ' ')
systemctl stop $unit
[ "$(systemctl is-active $unit)" != active ] || fail "still active after stop"
for p in $pids_stop; do [ -d /proc/$p ] || fail "daemon $p stopped with systemctl stop (on_agent_stop: keep)"; done
[ "$(fuse_mounts | wc -l)" -ge 3 ] || fail "FUSE mounts gone after systemctl stop"
systemctl start $unit
wait_for 90 "workspaces re-adopted" all_running
layoutctl shutdown --stop-workspaces || fail "layoutctl shutdown --stop-workspaces"
[ -z "$(fuse_mounts)" ] || fail "FUSE mounts left after shutdown: $(fuse_mounts)"
! pgrep -x layoutd-wsfs >/dev/null || fail "layoutd-wsfs still running after shutdown: $(pgrep -a layoutd-wsfs)"
! pgrep -x layoutd >/dev/null || fail "layoutd still running after shutdown"
log "after shutdown: $(findmnt -rn -o TARGET | grep -c "^$root/volumes") volume mounts stay (by design), no FUSE mount, no daemon"

step "remove the workspaces through the API, stop, layoutctl teardown: every volume down, vdo-xfs too"
systemctl start $unit
for w in ws-1 ws-2 ws-3; do
    code=$(api -o del.json -w '%{http_code}' -X DELETE "http://localhost/v1/workspaces/$w")
    case "$code" in 200|202) ;; *) fail "DELETE $w: HTTP $code $(cat del.json)" ;; esac
done
none_active() { [ "$(get /v1/workspaces | jq '[.workspaces[] | select(.active)] | length')" = 0 ]; }
wait_for 60 "every workspace removed" none_active
systemctl stop $unit
layoutctl teardown --layout $layouts/vm.yaml --json >td.json || true
jq -c '.volumes[] | {volume, outcome, message, steps: [.steps[]? | .description]}' td.json
[ "$(jq -r '.volumes[] | select(.volume == "content-0") | .outcome' td.json)" = changed ] || fail "content-0 not torn down"
[ "$(jq -r '[.volumes[] | select(.outcome != "changed")] | length' td.json)" = 0 ] || fail "some volumes not torn down"
[ -z "$(findmnt -rn -o TARGET | grep "^$root/")" ] || fail "mounts left after teardown: $(findmnt -rn -o TARGET | grep "^$root/")"
[ ! -e /dev/mapper/layoutd-content-0 ] || fail "dm device left after teardown"
[ -z "$(losetup -j "$root/images/content-0.img")" ] || fail "content-0 loop device left after teardown"
[ -f "$root/images/content-0.img" ] || fail "teardown deleted the backing file without --destroy-data"
log "ok"
