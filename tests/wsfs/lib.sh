# Helpers for the layoutd-wsfs tests. Source after tests/lib/common.sh.
WSFS=${WSFS:-$LAYOUTD_BUILD_DIR/examples/wsfs/layoutd-wsfs}
[ -x "$WSFS" ] || fail "layoutd-wsfs not built at $WSFS"
require_root
require_fuse

_wsfs_up() { # PID MNT: the daemon runs and serves MNT
    kill -0 "$1" 2>/dev/null || return 2
    findmnt -rn -o FSTYPE --mountpoint "$2" 2>/dev/null | grep -q '^fuse.layoutd-wsfs$'
}

# wsfs_start NAME [daemon options...]: state, content and mount point under
# $WORK/NAME unless the options say otherwise; sets WSFS_PID.
# Uses $WORK/NAME/{state,mnt}, content $WSFS_CONTENT (default
# $WORK/content), stats file $WORK/NAME/stats.json, log $WORK/NAME/log.
# WSFS_WRAP: a command that execs the daemon (e.g. "prlimit --nofile=4096:4096 --").
wsfs_start() {
    local name=$1; shift
    local d=$WORK/$name
    local -a wrap=()
    [ -z "${WSFS_WRAP:-}" ] || read -r -a wrap <<< "$WSFS_WRAP"
    mkdir -p "$d/state" "$d/mnt" "${WSFS_CONTENT:=$WORK/content}"
    "${wrap[@]}" "$WSFS" --state "$d/state" --content "$WSFS_CONTENT" --stats-file "$d/stats.json" \
        "$@" "$d/mnt" 2>"$d/log" &
    WSFS_PID=$!
    track_pid "$WSFS_PID"
    if ! wait_for 10 _wsfs_up "$WSFS_PID" "$d/mnt"; then
        cat "$d/log" >&2
        fail "layoutd-wsfs $name did not come up"
    fi
}

# wsfs_stop NAME PID: SIGTERM, a clean exit (status 0) and no mount left.
wsfs_stop() {
    local name=$1 pid=$2 rc=0
    kill -TERM "$pid"
    wait "$pid" || rc=$?
    [ "$rc" -eq 0 ] || { cat "$WORK/$name/log" >&2; fail "layoutd-wsfs $name exited with $rc"; }
    ! findmnt --mountpoint "$WORK/$name/mnt" >/dev/null || fail "$name still mounted after SIGTERM"
}

# stat_get NAME KEY: a counter from NAME's stats file.
stat_get() {
    sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p" "$WORK/$1/stats.json" 2>/dev/null
}

# all_committed NAME [MIN]: every submitted record is committed (and at least MIN).
all_committed() {
    local r c
    r=$(stat_get "$1" records); c=$(stat_get "$1" records_committed)
    [ -n "$r" ] && [ "$r" = "$c" ] && [ "$r" -ge "${2:-1}" ]
}

# fd_count PID: the fds the process holds now.
fd_count() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }

FSPROBE="/usr/bin/python3 $LAYOUTD_TESTS/wsfs/fsprobe.py"

# wsfs_mkvol NAME SIZE [FS [mkfs options...]]: a loop-backed filesystem
# (default ext4) mounted at $WORK/NAME; the teardown removes it.
wsfs_mkvol() {
    local name=$1 size=$2 fs=${3:-ext4}; shift 2; [ $# -gt 0 ] && shift
    require_loop
    require_cmd "mkfs.$fs"
    truncate -s "$size" "$WORK/$name.img"
    "mkfs.$fs" -q "$@" "$WORK/$name.img" >/dev/null 2>&1 || fail "mkfs.$fs $name"
    mkdir -p "$WORK/$name"
    mount -o loop "$WORK/$name.img" "$WORK/$name" || fail "mount $name"
}
