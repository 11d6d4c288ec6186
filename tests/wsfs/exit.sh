#!/usr/bin/env bash
# The daemon exits cleanly while readers still hold directories and files
# open: on SIGTERM the mount goes away under them and the kernel drops
# their pending RELEASE and RELEASEDIR requests, so the daemon must free
# those handles itself. Only the ASan build can see a handle left
# unfreed (a LeakSanitizer report and a non-zero exit; the chaos soak
# found exactly that for directories): tests/run runs this test with it
# and detect_leaks=1. With the plain build (ctest) it checks the clean
# exit alone, and says so.
TEST_NAME=wsfs-exit
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/wsfs/lib.sh"

grep -q __asan_init "$WSFS" ||
    log "note: $WSFS is not an ASan build: a clean exit is checked, a leak cannot be seen"
for round in single threads; do
    opts=()
    [ "$round" = threads ] && opts=(--threads=4)
    wsfs_start "$round" "${opts[@]}"
    m=$WORK/$round/mnt
    mkdir -p "$m/a/b/c" "$m/d"
    for k in 1 2 3; do head -c 100000 /dev/urandom > "$m/a/f$k"; done
    head -c 200000 /dev/urandom > "$m/d/big" # a CAS object once committed
    sync -f "$m"
    # Each of these opens a directory (OPENDIR) or a file (OPEN) and keeps
    # it open; ls reads one directory so a handle has a readdir position.
    exec 7<"$m/a" 8<"$m/a/b/c" 9<"$m/d" 5<"$m/a/f1" 6<"$m/d/big"
    ls "$m/a" >/dev/null
    pid=$WSFS_PID
    kill -TERM "$pid"
    rc=0
    wait "$pid" || rc=$?
    exec 7<&- 8<&- 9<&- 5<&- 6<&-
    if [ "$rc" -ne 0 ]; then
        cat "$WORK/$round/log" >&2
        fail "$round: layoutd-wsfs exited with $rc while directories and files were open"
    fi
    grep -q 'LeakSanitizer\|AddressSanitizer' "$WORK/$round/log" && { cat "$WORK/$round/log" >&2; fail "$round: a sanitizer report"; }
    ! findmnt --mountpoint "$m" >/dev/null || fail "$round: still mounted after SIGTERM"
    log "ok: $round: clean exit with 3 directories and 2 files open"
done
