# The space benchmark of XFS on VDO (opt-in: LAYOUTD_VM_BENCH=1 or =only
# tests/vm/run; never part of the CI test list, which runs guest/NN-*.sh).
#
# Three volumes with the same physical size (a 6 GiB sparse backing file on
# the data disk, loop device in direct-I/O mode), made as layoutd makes them:
#   loop-ext4  mkfs.ext4 -E nodiscard,assume_storage_prezeroed=1
#   loop-xfs   mkfs.xfs -K
#   vdo-xfs    src/vdo through vdo-smoke (vdoformat, dm-vdo with
#              deduplication and compression on, 24 GiB logical), mkfs.xfs -K
# Each gets K copies of a worktree-like tree written with
# `cp -a --reflink=never` (one cp per copy), then sync; the copy+sync is
# timed. Physical space: the backing file's allocated bytes (st_blocks*512)
# after the copies, and net of the same right after mkfs (the empty
# filesystem); for vdo-xfs also VDO's own count (data + overhead blocks).
# Rounds change the order of the three volumes; each round starts from fresh
# volumes. Prints RESULT lines (tests/vm/run echoes them). Speeds are those
# of a TCG-emulated guest: only ratios inside one run mean anything.
. "$LAYOUTD_VM_HOME/guest/lib.sh"
data_mount
K=${LAYOUTD_VM_BENCH_COPIES:-8}
ROUNDS=${LAYOUTD_VM_BENCH_ROUNDS:-3}
SIZE=6GiB
dir=/srv/data/bench
mkdir -p "$dir"
on_exit "bench_teardown_all"

# The tree: Python's standard library and Perl's core modules as Debian
# ships them in the guest (python3.11, perl-modules-5.36): a source-checkout
# shape (thousands of small text files, a few binary modules). Staged once,
# so every volume reads the same bytes from the page cache.
tree=/tmp/bench-tree
rm -rf "$tree"
mkdir -p "$tree"
cp -a /usr/lib/python3.11 "$tree/python3.11"
cp -a /usr/share/perl "$tree/perl"
find "$tree" -name __pycache__ -prune -exec rm -rf {} +
tree_bytes=$(du -s --block-size=1 --apparent-size "$tree" | cut -f1)
tree_files=$(find "$tree" -type f | wc -l)
find "$tree" -type f -exec cat {} + >/dev/null
log "RESULT tree=python3.11+perl-5.36 files=$tree_files bytes=$tree_bytes copies=$K written=$((tree_bytes * K))"

alloc() { echo $(($(stat -c %b "$1") * $(stat -c %B "$1"))); }
now_ns() { date +%s%N; }

loopdev=
bench_teardown() {  # name
    local m=$dir/mnt-$1 img=$dir/$1.img
    umount "$m" 2>/dev/null || true
    if [ "$1" = vdo ]; then
        vdo-smoke down bench-vdo "$img" >/dev/null 2>&1 || true
    else
        losetup -j "$img" | cut -d: -f1 | xargs -r -n1 losetup -d
    fi
    rm -f "$img"
}
bench_teardown_all() { for v in ext4 xfs vdo; do bench_teardown $v; done; rm -rf "$tree"; }

# make NAME: fresh backing file, device, filesystem, mount; prints the device
make_volume() {
    local v=$1 img=$dir/$1.img m=$dir/mnt-$1 dev
    rm -f "$img"
    mkdir -p "$m"
    if [ "$v" = vdo ]; then
        vdo-smoke up bench-vdo "$img" "$SIZE" 24GiB >up.out || fail "vdo up"
        [ "$(kv up.out direct_io)" = 1 ] || fail "vdo loop is not in direct-I/O mode"
        dev=$(kv up.out dm_node)
        mkfs.xfs -q -K "$dev"
    else
        truncate -s "$SIZE" "$img"
        dev=$(losetup -f --show --direct-io=on "$img")
        [ "$(cat /sys/block/${dev#/dev/}/loop/dio)" = 1 ] || fail "$dev is not in direct-I/O mode"
        if [ "$v" = ext4 ]; then
            mkfs.ext4 -q -E nodiscard,assume_storage_prezeroed=1 "$dev"
        else
            mkfs.xfs -q -K "$dev"
        fi
    fi
    mount -o noatime "$dev" "$m"
    sync
}

run_volume() {  # round name
    local r=$1 v=$2 img=$dir/$2.img m=$dir/mnt-$2 base t0 t1 ns after
    local vused=0
    make_volume "$v"
    base=$(alloc "$img")
    local vbase=0
    if [ "$v" = vdo ]; then
        vdo-smoke stats bench-vdo >s0.out
        vbase=$(( ($(kv s0.out data_blocks_used) + $(kv s0.out overhead_blocks_used)) * 4096 ))
    fi
    sync; echo 3 >/proc/sys/vm/drop_caches; find "$tree" -type f -exec cat {} + >/dev/null
    t0=$(now_ns)
    for i in $(seq 1 "$K"); do
        cp -a --reflink=never "$tree" "$m/worktree-$i"
    done
    sync
    t1=$(now_ns)
    ns=$((t1 - t0))
    after=$(alloc "$img")
    local mbps=$(( tree_bytes * K * 1000 / ns ))  # MB/s (10^6 B/s)
    local extra=
    if [ "$v" = vdo ]; then
        vdo-smoke stats bench-vdo | tee s1.out
        [ "$(kv s1.out mode)" = normal ] || fail "vdo mode $(kv s1.out mode)"
        vused=$(( ($(kv s1.out data_blocks_used) + $(kv s1.out overhead_blocks_used)) * 4096 ))
        extra=" vdo_used=$vused vdo_used_net=$((vused - vbase)) vdo_data=$(( $(kv s1.out data_blocks_used) * 4096 ))"
        extra+=" vdo_overhead=$(( $(kv s1.out overhead_blocks_used) * 4096 )) saving_percent=$(kv s1.out saving_percent)"
        extra+=" dedupe_advice_valid=$(kv s1.out dedupe_advice_valid) compressed_fragments=$(kv s1.out compressed_fragments_written)"
    fi
    df -B1 "$m" | tail -n1
    log "RESULT round=$r vol=$v seconds=$(printf '%d.%03d' $((ns / 1000000000)) $(( (ns / 1000000) % 1000 )))" \
        "MBps=$mbps file_alloc_empty=$base file_alloc=$after file_alloc_net=$((after - base))$extra"
    NS[$v]=$ns RAW[$v]=$after NET[$v]=$((after - base))
    [ "$v" != vdo ] || VUSED=$vused
    bench_teardown "$v"
}
declare -A NS RAW NET
VUSED=0
ratios() {  # round: the ratios the issue's targets are stated in
    awk -v r="$1" -v ne="${NET[ext4]}" -v nx="${NET[xfs]}" -v nv="${NET[vdo]}" \
        -v re="${RAW[ext4]}" -v rx="${RAW[xfs]}" -v rv="${RAW[vdo]}" -v vu="$VUSED" \
        -v te="${NS[ext4]}" -v tx="${NS[xfs]}" -v tv="${NS[vdo]}" 'BEGIN {
        printf "RESULT round=%d net_vdo/ext4=%.3f net_vdo/xfs=%.3f file_vdo/ext4=%.3f file_vdo/xfs=%.3f", r, nv/ne, nv/nx, rv/re, rv/rx
        printf " vdocount_vdo/ext4=%.3f saving_net_vs_ext4=%.1f%% tput_vdo/xfs=%.3f tput_ext4/xfs=%.3f\n", vu/re, 100*(1-nv/ne), tx/tv, tx/te }'
}

orders=("ext4 xfs vdo" "vdo xfs ext4" "xfs vdo ext4")
for r in $(seq 1 "$ROUNDS"); do
    for v in ${orders[$(( (r - 1) % 3 ))]}; do
        run_volume "$r" "$v"
    done
    log "$(ratios "$r")"
done
log "ok"
