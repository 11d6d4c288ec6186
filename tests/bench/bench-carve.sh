#!/usr/bin/env bash
# Carving one 1 GiB ext4 DIO volume end to end: `layoutctl apply` vs the
# shell equivalent (truncate + losetup --direct-io=on + mkfs.ext4 + mount),
# alternating in the same run. Reports the median of the paired ratios.
# Asserts nothing about time.
#   BENCH_REPEATS=N (default 5), BENCH_SIZE=1GiB
. "$LAYOUTD_TESTS/lib/common.sh"
LAYOUTCTL=${LAYOUTCTL:-$LAYOUTD_BUILD_DIR/agent/layoutctl}
[ -x "$LAYOUTCTL" ] || skip "layoutctl not built at $LAYOUTCTL"
require_root
require_loop
require_cmd mkfs.ext4
repeats=${BENCH_REPEATS:-5}
size=${BENCH_SIZE:-1GiB}
bytes=$(numfmt --from=iec-i "${size%B}")

ns() { date +%s%N; }

layoutd_run() {
    local root=$WORK/l$1
    cat >"$WORK/layout$1.yaml" <<EOL
version: 1
root: $root
pools:
  state:
    backend: loop-ext4
    volume_size: $size
    min_volumes: 1
    max_volumes: 1
    workspaces_per_volume: 1
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

shell_run() {
    local d=$WORK/s$1 t0 t1 l
    mkdir -p "$d/images" "$d/volumes/state-0"
    t0=$(ns)
    truncate -s "$bytes" "$d/images/state-0.img"
    l=$(losetup -f --show --direct-io=on "$d/images/state-0.img")
    mkfs.ext4 -q -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 "$l"
    mount "$l" "$d/volumes/state-0"
    t1=$(ns)
    echo $((t1 - t0))
    umount "$d/volumes/state-0"
    losetup -d "$l"
    rm -rf "$d"
}

ratios=()
for i in $(seq 1 "$repeats"); do
    if [ $((i % 2)) -eq 1 ]; then
        a=$(layoutd_run "$i"); b=$(shell_run "$i")
    else
        b=$(shell_run "$i"); a=$(layoutd_run "$i")
    fi
    r=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", a / b }')
    ratios+=("$r")
    printf 'bench-carve: run %d: layoutctl apply %.1f ms, shell %.1f ms, ratio %s\n' \
        "$i" "$(awk -v x="$a" 'BEGIN{print x/1e6}')" "$(awk -v x="$b" 'BEGIN{print x/1e6}')" "$r"
done
median=$(printf '%s\n' "${ratios[@]}" | sort -g | awk '{v[NR]=$1} END { if (NR % 2) print v[(NR+1)/2]; else printf "%.3f\n", (v[NR/2]+v[NR/2+1])/2 }')
echo "bench-carve: $size ext4 DIO volume, $repeats paired runs: median ratio layoutctl/shell = $median"
