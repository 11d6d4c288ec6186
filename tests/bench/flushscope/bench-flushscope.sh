#!/usr/bin/env bash
# The flush-scope benchmark (tests/bench/flushscope/README.md): N
# workspaces run the same workload in parallel, per arm (arms.py): sharing
# one host filesystem or placed by layoutd on loop-backed ext4 DIO volumes,
# through layoutd-wsfs (efficient defaults, --profile=published,
# fdatasync), without FUSE (the workload's own group commit: *-nofuse), and
# natively on those volumes (native-fsync, native-buffered); then fio on a
# FUSE mount vs natively. Reports; asserts nothing about time. Fails when
# the benchmark itself breaks (a workload error, a daemon that does not
# come up or leaks, a failed carve).
#
#   bench-flushscope.sh [--profile smoke|full|published] [flushscope.py run options...]
#   BENCH_OUT=DIR   where results go (default $LAYOUTD_BUILD_DIR/bench-flushscope/<profile>)
#
# Everything is made below $WORK (tests/lib/common.sh) on the root
# filesystem and torn down on exit, also on failure.
TEST_NAME=bench-flushscope
# ctest sets LAYOUTD_TESTS; run by hand, find the tests dir from here.
: "${LAYOUTD_TESTS:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
. "$LAYOUTD_TESTS/lib/common.sh"
require_root
require_loop
require_fuse
require_cmd mkfs.ext4
require_cmd fio
require_cmd gnuplot
PY=/usr/bin/python3 # Debian's: the driver needs only the standard library
[ -x "$PY" ] || skip "needs $PY"
for b in agent/layoutd agent/layoutctl examples/wsfs/layoutd-wsfs tests/bench/flushscope/flushscope-workload; do
    [ -x "$LAYOUTD_BUILD_DIR/$b" ] || fail "not built: $LAYOUTD_BUILD_DIR/$b"
done

profile=smoke
args=()
while [ $# -gt 0 ]; do
    case $1 in
        --profile) profile=$2; shift 2 ;;
        --profile=*) profile=${1#*=}; shift ;;
        *) args+=("$1"); shift ;;
    esac
done
out=${BENCH_OUT:-$LAYOUTD_BUILD_DIR/bench-flushscope/$profile}
mkdir -p "$out"

# The driver cleans up after each arm; this catches what an interrupted
# driver left: its agents (pids it recorded) get SIGINT, which stops their
# daemons too (SIGTERM would leave the daemons running for re-adoption),
# then any daemon it recorded that still runs below $WORK (the command line
# names $WORK, so a reused pid is never hit), then common.sh unmounts and
# detaches everything below $WORK.
ours() { { tr '\0' ' ' < "/proc/$1/cmdline"; } 2>/dev/null | grep -qF "$WORK/"; }
gone() { ! ours "$1"; }
kill_agents() {
    local p
    local -a live=()
    [ -f "$WORK/agent.pids" ] || return 0
    while read -r p; do
        ours "$p" && live+=("$p") && kill -INT "$p" 2>/dev/null || true
    done < "$WORK/agent.pids"
    # Each agent stops its daemons within their stop_timeout (3 s).
    for p in "${live[@]:-}"; do
        [ -n "$p" ] && { wait_for 30 gone "$p" || log "agent $p did not exit after SIGINT"; }
    done
}
kill_daemons() {
    local p
    [ -f "$WORK/daemon.pids" ] || return 0
    while read -r p; do
        if ours "$p"; then
            log "daemon $p still running after its agent stopped, killing it"
            kill -KILL "$p" 2>/dev/null || true
        fi
    done < "$WORK/daemon.pids"
}
# Interrupted: the driver gets SIGTERM first, so it tears down the arm it
# is in (its finally blocks) before common.sh sweeps $WORK.
DRIVER=
stop_driver() {
    [ -n "$DRIVER" ] && kill -0 "$DRIVER" 2>/dev/null || return 0
    kill -TERM "$DRIVER" 2>/dev/null || true
    wait "$DRIVER" 2>/dev/null || true
}
on_cleanup stop_driver
on_cleanup kill_agents
on_cleanup kill_daemons
export PYTHONDONTWRITEBYTECODE=1

log "profile $profile, results in $out, load average $(cut -d' ' -f1-3 /proc/loadavg)"
# In the background and waited for, so that a SIGTERM to this script is
# handled at once (bash runs traps only between commands or in wait).
case $profile in
    # The isolation (latency) profile: latency.py, README.md "Isolation".
    # isolation-smoke (CI): N=4, H=1, 10 s per arm; proves it runs and
    # yields numbers, asserts nothing about them.
    isolation-smoke)
        [ -x "$LAYOUTD_BUILD_DIR/tests/bench/flushscope/flushscope-latency" ] || fail "flushscope-latency not built"
        "$PY" "$(dirname "${BASH_SOURCE[0]}")/latency.py" run --work "$WORK" --build "$LAYOUTD_BUILD_DIR" \
            --out "$out" --configs 4:1 --rates 20 --duration 10 "${args[@]}" & ;;
    isolation)
        [ -x "$LAYOUTD_BUILD_DIR/tests/bench/flushscope/flushscope-latency" ] || fail "flushscope-latency not built"
        "$PY" "$(dirname "${BASH_SOURCE[0]}")/latency.py" run --work "$WORK" --build "$LAYOUTD_BUILD_DIR" \
            --out "$out" "${args[@]}" & ;;
    *)
        "$PY" "$(dirname "${BASH_SOURCE[0]}")/flushscope.py" run --work "$WORK" --build "$LAYOUTD_BUILD_DIR" \
            --out "$out" --profile "$profile" "${args[@]}" & ;;
esac
DRIVER=$!
wait "$DRIVER"
