#!/usr/bin/env bash
# 8 workspaces start; each mount serves files written through it, which land
# in that workspace's state dir; the daemon gets the documented environment
# and its output reaches the agent tagged with the workspace id; SIGTERM to
# the agent leaves no FUSE mount and no daemon.
. "$LAYOUTD_TESTS/supervise/lib.sh"
N=8
gen_config $N
start_harness
wait_for 20 all_running || fail "not all running: $(cat "$STATUS")"
for i in $(seq 1 $N); do
    id=ws$i
    assert_eq 1 "$(fuse_mounts_at "$WORK/mnt/$id")" "$id: one FUSE mount"
    echo "hello $id" >"$WORK/mnt/$id/file.txt"
    assert_eq "hello $id" "$(cat "$WORK/state/$id/file.txt")" "$id: file in its state dir"
    assert_eq "hello $id" "$(cat "$WORK/mnt/$id/file.txt")" "$id: read back through the mount"
    pid=$(st $id pid)
    tr '\0' '\n' </proc/$pid/environ | grep -qx "LAYOUTD_WORKSPACE=$id" || fail "$id: LAYOUTD_WORKSPACE"
    tr '\0' '\n' </proc/$pid/environ | grep -qx "LAYOUTD_SHARDS=0" || fail "$id: LAYOUTD_SHARDS"
    [ "$(awk '{print $6}' /proc/$pid/stat)" = "$pid" ] || fail "$id: daemon is not a session leader"
    [ "$(ls /proc/$pid/fd | wc -l)" -lt 12 ] || fail "$id: daemon inherited fds: $(ls -l /proc/$pid/fd)"
    grep -qF "[$id] testfs: workspace=$id" "$HLOG" || fail "$id: daemon output not logged"
    assert_eq 0 "$(st $id restarts)" "$id restarts"
done
# The record has every daemon's identity.
for i in $(seq 1 $N); do
    rp=$(jq -r ".workspaces[] | select(.id == \"ws$i\") | .daemon.pid" "$RECORD")
    assert_eq "$(st ws$i pid)" "$rp" "ws$i: recorded pid"
done
pids=$(jq -r '.workspaces[].pid' "$STATUS")
kill -TERM "$HPID"
wait "$HPID" || fail "harness exited with $?"
HPID=
assert_eq 0 "$(fuse_mounts_below "$WORK/mnt")" "FUSE mounts left after stop"
for p in $pids; do alive "$p" && fail "daemon $p still alive after stop"; done
assert_eq "" "$(work_pids)" "processes left"
log "ok"
