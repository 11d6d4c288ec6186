#!/usr/bin/env bash
# The flush-scope benchmark (docs/benchmarks.md, "Flush scope"): N
# workspaces run the same workload in parallel, per arm: sharing one host
# filesystem (shared, shared-fdatasync), placed by layoutd on loop-backed
# ext4 DIO volumes (layoutd-b3, layoutd-b1), and natively on those volumes
# (native-fsync, native-buffered); then fio on a FUSE mount vs natively.
# Reports; asserts nothing about time. Fails when the benchmark itself
# breaks (a workload error, a daemon that does not come up, a failed carve).
#
#   bench-flushscope.sh [--profile smoke|full] [flushscope.py run options...]
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
# driver left: its agents (pids it recorded), then common.sh unmounts and
# detaches everything below $WORK.
kill_agents() {
    local p
    [ -f "$WORK/agent.pids" ] || return 0
    while read -r p; do
        kill -TERM "$p" 2>/dev/null || true
    done < "$WORK/agent.pids"
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

log "profile $profile, results in $out, load average $(cut -d' ' -f1-3 /proc/loadavg)"
# In the background and waited for, so that a SIGTERM to this script is
# handled at once (bash runs traps only between commands or in wait).
"$PY" "$(dirname "${BASH_SOURCE[0]}")/flushscope.py" run --work "$WORK" --build "$LAYOUTD_BUILD_DIR" \
    --out "$out" --profile "$profile" "${args[@]}" &
DRIVER=$!
wait "$DRIVER"
