#!/usr/bin/env bash
# Group commit: each strategy commits batches of at most --batch-records
# records, flushes (syncfs, fdatasync) or not (none), and an application's
# fsync is honoured in every mode. Once more on a loop-backed ext4 volume
# made here, with the CAS pool on it too.
TEST_NAME=wsfs-commit
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/wsfs/lib.sh"

stat_ge() { [ "$(stat_get "$1" "$2")" -ge "$3" ]; }

# write_files NAME N: N small files, one record each at least.
write_files() {
    for i in $(seq 1 "$2"); do printf 'file %d\n' "$i" > "$WORK/$1/mnt/f$i"; done
}

for mode in syncfs fdatasync none; do
    wsfs_start "$mode" --commit="$mode" --batch-records=5 --batch-ms=1000 --cas-threshold=0
    write_files "$mode" 20
    mkdir "$WORK/$mode/mnt/dir"; mv "$WORK/$mode/mnt/f1" "$WORK/$mode/mnt/dir/"; rm "$WORK/$mode/mnt/f2"
    wait_for 20 all_committed "$mode" 23 || fail "$mode: records not committed: $(cat "$WORK/$mode/stats.json")"
    records=$(stat_get "$mode" records)
    batches=$(stat_get "$mode" batches)
    flushes=$(stat_get "$mode" flushes)
    log "$mode: $(cat "$WORK/$mode/stats.json")"
    assert_eq "\"commit\":\"$mode\"" "$(grep -o '"commit":"[a-z]*"' "$WORK/$mode/stats.json")" "$mode: mode in stats"
    # A batch never holds more than --batch-records records.
    [ "$batches" -ge $(( (records + 4) / 5 )) ] || fail "$mode: $records records in only $batches batches"
    assert_eq 0 "$(stat_get "$mode" flush_errors)" "$mode: flush errors"
    case $mode in
        syncfs) [ "$flushes" -ge "$batches" ] || fail "syncfs: $flushes flushes for $batches batches" ;;
        # at least the file and its directory per batch
        fdatasync) [ "$flushes" -ge $((2 * batches)) ] || fail "fdatasync: $flushes flushes for $batches batches" ;;
        none) assert_eq 0 "$flushes" "none: flush count" ;;
    esac
    # fsync(2) from the application is honoured synchronously, whatever the mode.
    dd if=/dev/zero of="$WORK/$mode/mnt/synced" bs=4k count=4 conv=fsync status=none
    kill -USR1 "$WSFS_PID"
    wait_for 10 stat_ge "$mode" app_fsyncs 1 || fail "$mode: app fsync not counted"
    [ "$mode" != none ] || assert_eq 0 "$(stat_get none flushes)" "none: app fsync is not a batch flush"
    wsfs_stop "$mode" "$WSFS_PID"
    grep -q 'layoutd-wsfs: stats {' "$WORK/$mode/log" || fail "$mode: SIGUSR1 printed no stats"
done

# The same on dedicated ext4 and XFS volumes (each a flush domain of its
# own), with state and content pool on it and CAS on: the objects'
# filesystem is synced before stubs are punched.
require_loop
for fs in ext4 xfs; do
    command -v "mkfs.$fs" >/dev/null || { log "no mkfs.$fs: skipping the $fs volume"; continue; }
    truncate -s 512M "$WORK/$fs.img"
    "mkfs.$fs" -q "$WORK/$fs.img" 2>/dev/null || "mkfs.$fs" -q -f "$WORK/$fs.img"
    mkdir -p "$WORK/vol-$fs"
    mount -o loop "$WORK/$fs.img" "$WORK/vol-$fs" || skip "cannot mount a loop-backed $fs"
    mkdir -p "$WORK/vol-$fs/content" "$WORK/vol-$fs/state"
    WSFS_CONTENT=$WORK/vol-$fs/content wsfs_start "$fs" --cas-threshold=64K --state "$WORK/vol-$fs/state"
    m=$WORK/$fs/mnt
    head -c $((2 * 1024 * 1024)) /dev/urandom > "$WORK/blob"
    for i in 1 2 3; do cp "$WORK/blob" "$m/blob$i"; done
    write_files "$fs" 50
    wait_for 20 stat_ge "$fs" stubs_punched 3 || fail "$fs: stubs not punched: $(cat "$WORK/$fs/stats.json")"
    wait_for 20 all_committed "$fs" 53 || fail "$fs: not committed: $(cat "$WORK/$fs/stats.json")"
    log "$fs: $(cat "$WORK/$fs/stats.json")"
    assert_eq 1 "$(stat_get "$fs" objects_stored)" "$fs: one object for three copies"
    assert_eq 2 "$(stat_get "$fs" objects_deduplicated)" "$fs: two deduplicated"
    [ "$(stat_get "$fs" flushes)" -gt 0 ] || fail "$fs: no flush"
    [ "$(stat -c %b "$WORK/vol-$fs/state/blob1")" -lt 64 ] || fail "$fs: stub not punched"
    for i in 1 2 3; do cmp "$WORK/blob" "$m/blob$i" || fail "$fs: blob$i"; done
    assert_eq "$(stat -f -c %b "$WORK/vol-$fs")" "$(stat -f -c %b "$m")" "statfs is the $fs volume's"
    wsfs_stop "$fs" "$WSFS_PID"
done
log "ok"
