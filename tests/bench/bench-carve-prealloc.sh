#!/usr/bin/env bash
# The carve-time cost of preallocate: true (docs/layout.md): `layoutctl
# apply` of the isolation profile's N=21 loop-xfs layout (7 state volumes
# of 1 GiB, one content volume of BENCH_CONTENT, default 18GiB), sparse
# and preallocated, alternating, BENCH_REPEATS times (default 3). Reports
# each time and the median ratio; asserts nothing about time. Needs the
# content size free on the host (a preallocated image takes it all).
. "$LAYOUTD_TESTS/lib/common.sh"
LAYOUTCTL=${LAYOUTCTL:-$LAYOUTD_BUILD_DIR/agent/layoutctl}
[ -x "$LAYOUTCTL" ] || skip "layoutctl not built at $LAYOUTCTL"
require_root
require_loop
require_cmd mkfs.xfs
repeats=${BENCH_REPEATS:-3}
content=${BENCH_CONTENT:-18GiB}

ns() { date +%s%N; }
run() { # run ID PREALLOCATE: prints ns
    cat >"$WORK/layout$1.yaml" <<EOL
version: 1
root: $WORK/r$1
pools:
  state: {backend: loop-xfs, volume_size: 1GiB, min_volumes: 7, max_volumes: 7, workspaces_per_volume: 3, preallocate: $2}
  content: {backend: loop-xfs, volume_size: $content, preallocate: $2}
workspace:
  command: [/bin/true]
EOL
    local t0 t1
    t0=$(ns)
    "$LAYOUTCTL" apply --layout "$WORK/layout$1.yaml" >/dev/null || fail "apply failed"
    t1=$(ns)
    echo $((t1 - t0))
    "$LAYOUTCTL" teardown --destroy-data --layout "$WORK/layout$1.yaml" >/dev/null || fail "teardown failed"
}
ratios=()
for i in $(seq 1 "$repeats"); do
    if [ $((i % 2)) -eq 1 ]; then a=$(run "s$i" false); b=$(run "p$i" true)
    else b=$(run "p$i" true); a=$(run "s$i" false); fi
    log "repeat $i: sparse $((a / 1000000)) ms, preallocated $((b / 1000000)) ms"
    ratios+=("$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b / a }')")
done
med=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
log "median preallocated/sparse carve time: $med (load $(cut -d' ' -f1-3 /proc/loadavg))"
