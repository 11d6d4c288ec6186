#!/usr/bin/env bash
# A crash (kill -9) in the middle of writes: after the dead mount is
# cleaned up and a new daemon serves the same state dir, every file whose
# batch the stats file reported committed is intact, CAS stubs included.
# (A killed process loses no page cache, so this checks the state dir's
# consistency across a daemon crash, not power-loss durability.)
TEST_NAME=wsfs-crash
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/wsfs/lib.sh"
require_cmd fusermount3

N=200
for mode in syncfs fdatasync; do
    name=crash-$mode
    wsfs_start "$name" --commit="$mode" --batch-records=32 --batch-ms=20 --cas-threshold=16K
    m=$WORK/$name/mnt
    mkdir -p "$WORK/$name/expect" "$m/d"
    for i in $(seq 1 $N); do
        # every 10th file is large enough to go to the pool
        size=$(( i % 10 == 0 ? 40000 + i : 100 + i ))
        head -c "$size" /dev/urandom > "$WORK/$name/expect/f$i"
        cp "$WORK/$name/expect/f$i" "$m/d/f$i"
    done
    wait_for 30 all_committed "$name" $N || fail "$mode: not committed: $(cat "$WORK/$name/stats.json")"
    log "$mode before the crash: $(cat "$WORK/$name/stats.json")"

    # Keep writing while the daemon dies.
    ( exec 2>/dev/null; i=0; while :; do i=$((i + 1)); head -c 3000 /dev/urandom > "$m/busy$i" 2>/dev/null || exit 0; done ) &
    writer=$!
    track_pid "$writer"
    wait_for 10 test -e "$m/busy20" || fail "$mode: background writer did not start"
    kill -KILL "$WSFS_PID"
    wait "$WSFS_PID" 2>/dev/null || true
    wait "$writer" 2>/dev/null || true
    # The dead mount answers ENOTCONN until it is taken down.
    fusermount3 -uz "$m" 2>/dev/null || umount -l "$m"
    ! findmnt --mountpoint "$m" >/dev/null || fail "$mode: dead mount still there"

    wsfs_start "$name" --commit="$mode"
    for i in $(seq 1 $N); do
        cmp "$WORK/$name/expect/f$i" "$m/d/f$i" || fail "$mode: f$i differs after the crash"
    done
    # The files being written at the crash are readable (whatever their content).
    find "$m" -type f -name 'busy*' -exec cat {} + > /dev/null || fail "$mode: unreadable file after the crash"
    wsfs_stop "$name" "$WSFS_PID"
done
log "ok"
