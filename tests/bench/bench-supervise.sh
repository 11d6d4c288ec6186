#!/usr/bin/env bash
# Supervisor benchmarks (reported, never asserted on time):
#   soak   100 kill -9 in a row across 16 workspaces; all healthy at the end,
#          pre-written checksums unchanged (this part does assert health)
#   idle   agent (harness) CPU over 10 s with 64 idle workspaces (no polling)
#   rss    agent RSS with 128 workspaces
#   ready  spawn -> mount visible latency p50/p99 over 128 workspaces
# BENCH_SUPERVISE_KILLS / _IDLE_S override the sizes.
TEST_NAME=bench-supervise
. "$LAYOUTD_TESTS/supervise/lib.sh"
KILLS=${BENCH_SUPERVISE_KILLS:-100}
IDLE_S=${BENCH_SUPERVISE_IDLE_S:-10}
report() { printf 'bench-supervise: %s\n' "$*"; }
stop_harness() { kill -TERM "$HPID"; wait "$HPID" || fail "harness exit"; HPID=; rm -f "$RECORD"; }
# Fast restarts, never give up: the soak kills the same workspace often.
FAST='{"backoff_initial_ms": 100, "backoff_max_ms": 400, "backoff_reset_after_ms": 300, "crashloop_deaths": 0}'

# ---- soak
gen_config 16 "$FAST"
start_harness
wait_for 30 all_running || fail "soak: not all running"
for i in $(seq 1 16); do head -c 65536 /dev/urandom >"$WORK/mnt/ws$i/blob"; done
sums=$(cd "$WORK/state" && sha256sum ws*/blob)
t0=$(date +%s.%N)
for k in $(seq 1 "$KILLS"); do
    id=ws$((RANDOM % 16 + 1))
    wait_for 20 state_is $id running || fail "soak: $id not running before kill $k"
    pid=$(st $id pid)
    kill -KILL "$pid"
    wait_for 20 sh -c "[ \"\$(jq -r '.workspaces.$id.pid' '$STATUS')\" != '$pid' ]" || fail "soak: $id not restarted"
done
wait_for 60 all_running || fail "soak: not all running at the end"
t1=$(date +%s.%N)
for i in $(seq 1 16); do assert_eq 1 "$(fuse_mounts_at "$WORK/mnt/ws$i")" "soak: ws$i mounts"; done
assert_eq "$sums" "$(cd "$WORK/mnt" && sha256sum ws*/blob)" "soak: checksums through the mounts"
restarts=$(jq '[.workspaces[].restarts] | add' "$STATUS")
assert_eq "$KILLS" "$restarts" "soak: total restarts"
report "soak: $KILLS kill -9 over 16 workspaces in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s, all healthy, checksums unchanged"
stop_harness

cpu_ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' /proc/"$1"/stat; }
pctl() { sort -n | awk -v p="$1" '{ a[NR] = $1 } END { i = int(NR * p / 100 + 0.999); if (i < 1) i = 1; print a[i] }'; }

# ---- idle CPU, 64 workspaces
rm -rf "$WORK/state"/* ; gen_config 64
start_harness
wait_for 60 all_running || fail "idle: not all running"
sleep 1
c0=$(cpu_ticks "$HPID")
sleep "$IDLE_S"
c1=$(cpu_ticks "$HPID")
report "idle: harness CPU over ${IDLE_S} s with 64 workspaces: $((c1 - c0)) ticks ($(getconf CLK_TCK)/s)"
stop_harness

# ---- RSS and ready latency, 128 workspaces
gen_config 128
start_harness
wait_for 120 all_running || fail "rss: not all running"
report "rss: harness VmRSS with 128 workspaces: $(awk '/VmRSS/ {print $2, $3}' /proc/"$HPID"/status)"
lat=$(jq -r '.workspaces[].ready_latency_us' "$STATUS")
report "ready: spawn -> FUSE mount visible (testfs), 128 workspaces started together: p50 $(pctl 50 <<<"$lat") us, p99 $(pctl 99 <<<"$lat") us"
stop_harness
# Sequential starts: one workspace at a time, for the per-start cost without contention.
: >"$WORK/lat"
for i in $(seq 1 20); do
    gen_config 1
    start_harness
    wait_state ws1 running 20
    st ws1 ready_latency_us >>"$WORK/lat"
    stop_harness
done
report "ready: spawn -> FUSE mount visible (testfs), one at a time x20: p50 $(pctl 50 <"$WORK/lat") us, p99 $(pctl 99 <"$WORK/lat") us"
