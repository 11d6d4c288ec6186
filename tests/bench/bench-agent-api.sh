#!/usr/bin/env bash
# The API of the real agent under load (issue: "no device work on the event
# loop"): W workspaces on ceil(W/3) loop-ext4 volumes with their real FUSE
# daemons, then
#   1. every GET route with one keep-alive client: p50/p99/max, requests/s;
#   2. GET /v1/status with one client while 8 creates run at once, each of
#      which carves a new volume (tenant_isolation: a new tenant needs a
#      volume of its own): p99 and max of the status answers meanwhile.
# With LAYOUTD_BENCH_API_BEFORE=<build dir of another version> the same runs
# against that agent first, in the same invocation, and the ratios
# after/before are printed. Reports; asserts only that every request got
# its answer (never anything about time).
#
#   LAYOUTD_BENCH_API_WORKSPACES=W   (default 12; the full run: 128 -> 43 volumes)
#   LAYOUTD_BENCH_API_REQUESTS=N     per GET route (default 2000)
#   LAYOUTD_BENCH_API_BEFORE=DIR     a build dir to compare with (optional)
#   LAYOUTD_BENCH_API_OUT=FILE       raw lines appended here (optional)
TEST_NAME=bench-agent-api
. "$LAYOUTD_TESTS/lib/common.sh"
require_root; require_loop; require_fuse; require_cmd curl; require_cmd mkfs.ext4
PY=/usr/bin/python3
BENCH=$LAYOUTD_BUILD_DIR/tests/bench/bench-api
WSFS=$LAYOUTD_BUILD_DIR/examples/wsfs/layoutd-wsfs
[ -x "$BENCH" ] && [ -x "$WSFS" ] || fail "bench-api or layoutd-wsfs not built"
W=${LAYOUTD_BENCH_API_WORKSPACES:-12}
N=${LAYOUTD_BENCH_API_REQUESTS:-2000}
V=$(((W + 2) / 3))
OUT=${LAYOUTD_BENCH_API_OUT:-$WORK/results.txt}
on_cleanup 'pkill -KILL -f -- "--state $WORK/" 2>/dev/null || true'
log "load $(cut -d' ' -f1-3 /proc/loadavg); $W workspaces on $V volumes; $N requests per route"

# run_agent LABEL BUILD_DIR: one full round against that build's layoutd.
run_agent() {
    local label=$1 build=$2 root=$WORK/$1 sock=$WORK/$1/api.sock
    mkdir -p "$root"
    cat >"$root/layout.yaml" <<YAML
version: 1
root: $root/root
pools:
  state:
    backend: loop-ext4
    volume_size: 64MiB
    min_volumes: $V
    max_volumes: $((V + 16))
    workspaces_per_volume: 3
    workspace_reserve: 4MiB
    tenant_isolation: true
    # pack: a tenant's three workspaces fill one volume (spread would give
    # each its own), so W workspaces sit on ceil(W/3) volumes.
    placement: pack
  content:
    backend: loop-ext4
    volume_size: 128MiB
    shards: 1
workspace:
  mount_root: $root/mnt
  command: [$WSFS, --state, "{state_dir}", --content, "{content_dirs}", "{mountpoint}"]
  ready_timeout: 30s
  stop_timeout: 10s
api:
  socket: $sock
  group: layoutd-no-such-group
  flush_probe_interval: 30s
YAML
    "$build/agent/layoutd" --layout "$root/layout.yaml" >"$root/agent.log" 2>&1 &
    local pid=$!
    track_pid "$pid"
    wait_for 300 curl -sf --unix-socket "$sock" http://l/v1/status -o /dev/null || fail "$label: agent did not answer"
    wait_for 300 sh -c "curl -s --unix-socket '$sock' http://l/v1/status | grep -q '\"state\":\"ready\"'" ||
        fail "$label: agent not ready"
    local i t0=$SECONDS
    for i in $(seq 0 $((W - 1))); do
        code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 120 --unix-socket "$sock" -X POST \
            -d "{\"id\":\"ws-$i\",\"tenant\":\"t$((i / 3))\"}" http://l/v1/workspaces)
        [ "$code" = 201 ] || fail "$label: create ws-$i: HTTP $code ($(tail -3 "$root/agent.log"))"
    done
    running() { curl -s --unix-socket "$sock" http://l/v1/status | has "\"running\":$W,"; }
    wait_for 300 running || fail "$label: not all $W daemons running"
    log "$label: $W workspaces created and running in $((SECONDS - t0)) s"
    for route in /v1/status /v1/health /v1/volumes /v1/volumes/state-0 /v1/workspaces /v1/workspaces/ws-1 \
                 /v1/capacity /metrics; do
        # The route must exist in this build (an older one may lack /v1/health).
        curl -sf -o /dev/null --unix-socket "$sock" "http://l$route" || { log "$label: $route: not served, skipped"; continue; }
        line=$("$BENCH" "$sock" "$route" 1 "$N") || fail "$label: errors on $route"
        echo "$label $line" | tee -a "$OUT"
    done
    # 8 creates at once, each carving a volume, while one client reads status.
    "$BENCH" "$sock" /v1/status 1 6s >"$root/during.txt" &
    local bench=$!
    sleep 0.5
    # One curl sends the 8 creates in parallel (-Z): eight curl processes
    # starting at once took the two CPUs from the agent for ~10 ms (perf
    # sched: the agent's thread runnable but not running), which measured
    # the load generator, not the agent.
    local args=() c0=$SECONDS
    for i in $(seq 0 7); do
        [ "$i" = 0 ] || args+=(--next)
        args+=(-s -o "$root/carve-$i.out" -w "%{http_code} $i\n" --max-time 120 --unix-socket "$sock" -X POST
               -d "{\"id\":\"carve-$i\",\"tenant\":\"new-$i\"}" http://l/v1/workspaces)
    done
    curl -Z --parallel-immediate --parallel-max 8 "${args[@]}" >"$root/carve.codes" 2>/dev/null || true
    local carve_s=$((SECONDS - c0))
    wait "$bench" || fail "$label: errors on /v1/status during the carves"
    for i in $(seq 0 7); do
        grep -qx "201 $i" "$root/carve.codes" || fail "$label: carve create $i: $(grep " $i\$" "$root/carve.codes") $(cat "$root/carve-$i.out")"
    done
    echo "$label during-8-carves (creates took ${carve_s} s) $(cat "$root/during.txt")" | tee -a "$OUT"
    # SIGINT: stop the daemons too (SIGTERM would leave them serving).
    kill -INT "$pid"
    wait_for 120 sh -c "! kill -0 $pid 2>/dev/null" || fail "$label: agent did not stop"
    wait "$pid" 2>/dev/null || true
    cleanup_below "$root"
}

: >"$OUT" # one invocation, one report
[ -n "${LAYOUTD_BENCH_API_BEFORE:-}" ] && run_agent before "$LAYOUTD_BENCH_API_BEFORE"
run_agent after "$LAYOUTD_BUILD_DIR"
log "load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "${LAYOUTD_BENCH_API_BEFORE:-}" ]; then
    "$PY" - "$OUT" <<'PY'
import re, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"(before|after) (?:during-8-carves .*?)?bench-api: GET (\S+)\s.*p50=(\d+)us p99=(\d+)us max=(\d+)us rps=(\d+)", line)
    if not m:
        continue
    who, route, p50, p99, mx, rps = m.groups()
    key = route + (" during 8 carves" if "during" in line else "")
    rows.setdefault(key, {})[who] = (int(p50), int(p99), int(mx), int(rps))
print("%-34s %12s %12s %12s %10s" % ("route", "p99 before", "p99 after", "max after", "rps after"))
for k, v in rows.items():
    if "before" in v and "after" in v:
        print("%-34s %10dus %10dus %10dus %10d  (p99 after/before %.2f)" % (
            k, v["before"][1], v["after"][1], v["after"][2], v["after"][3], v["after"][1] / max(v["before"][1], 1)))
PY
fi
log "OK"
