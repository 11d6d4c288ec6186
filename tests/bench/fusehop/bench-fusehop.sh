#!/usr/bin/env bash
# The FUSE-hop benchmark (docs/benchmarks.md, "FUSE hop"): the same
# workloads natively, through layoutd-wsfs (default and
# --profile=published) and through libfuse's passthrough_ll, on one
# loop-ext4 volume, in one invocation with paired ratios (fusehop.py).
# Reports; asserts nothing about time. Fails when the benchmark itself
# breaks (a workload's content check, a daemon that does not come up).
#
#   bench-fusehop.sh [--profile smoke|full] [fusehop.py run options...]
#   BENCH_OUT=DIR   where results go (default $LAYOUTD_BUILD_DIR/bench-fusehop/<profile>)
TEST_NAME=bench-fusehop
: "${LAYOUTD_TESTS:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
. "$LAYOUTD_TESTS/lib/common.sh"
require_root
require_loop
require_fuse
require_cmd mkfs.ext4
require_cmd fio
require_cmd fusermount3
PY=/usr/bin/python3 # Debian's: the driver needs only the standard library
[ -x "$PY" ] || skip "needs $PY"
for b in examples/wsfs/layoutd-wsfs tests/bench/flushscope/flushscope-workload tests/bench/fusehop/fusehop-stream; do
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
out=${BENCH_OUT:-$LAYOUTD_BUILD_DIR/bench-fusehop/$profile}
mkdir -p "$out"

# Interrupted: the driver gets SIGTERM first and tears down the run it is
# in, then common.sh sweeps $WORK (mounts, the volume's loop device).
DRIVER=
stop_driver() {
    [ -n "$DRIVER" ] && kill -0 "$DRIVER" 2>/dev/null || return 0
    kill -TERM "$DRIVER" 2>/dev/null || true
    wait "$DRIVER" 2>/dev/null || true
}
on_cleanup stop_driver

log "profile $profile, results in $out, load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" "$(dirname "${BASH_SOURCE[0]}")/fusehop.py" run --work "$WORK" --build "$LAYOUTD_BUILD_DIR" \
    --out "$out" --profile "$profile" "${args[@]}" &
DRIVER=$!
wait "$DRIVER"
