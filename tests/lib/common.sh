# Shared helpers for integration tests (bash). Source it first:
#   . "$LAYOUTD_TESTS/lib/common.sh"
# It gives every test a private work directory and a teardown that runs
# also when the test fails: it unmounts every mount below the work
# directory, detaches every loop device whose backing file is below it,
# and kills processes registered with track_pid. Tests never touch loop
# devices or mounts they did not make.
set -euo pipefail

: "${LAYOUTD_SOURCE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
: "${LAYOUTD_BUILD_DIR:=$LAYOUTD_SOURCE_DIR/build}"
: "${LAYOUTD_TESTS:=$LAYOUTD_SOURCE_DIR/tests}"
export LAYOUTD_SOURCE_DIR LAYOUTD_BUILD_DIR LAYOUTD_TESTS

TEST_NAME=${TEST_NAME:-$(basename "$0" .sh)}
_tracked_pids=()
_cleanup_hooks=()

log() { printf '[%s] %s\n' "$TEST_NAME" "$*" >&2; }
fail() { log "FAIL: $*"; exit 1; }
skip() { log "SKIP: $*"; exit 77; }

# cmd | has [GREP-OPTIONS] PATTERN: cmd printed a line that matches. It
# reads all of cmd's output before it looks: `cmd | grep -q` under
# pipefail fails at random when grep quits at the first match and cmd,
# still writing, dies of SIGPIPE (a large /metrics or journal does).
has() { local text; text=$(cat); grep -q "$@" <<<"$text"; }

require_root() { [ "$(id -u)" -eq 0 ] || skip "needs root"; }
require_cmd() { command -v "$1" >/dev/null 2>&1 || skip "needs $1"; }
require_loop() { [ -e /dev/loop-control ] || skip "no /dev/loop-control"; }
require_fuse() { [ -e /dev/fuse ] || skip "no /dev/fuse"; }

# WORK: this test's private directory. Everything the test makes lives below.
WORK=$(mktemp -d "/tmp/layoutd-test-${TEST_NAME}.XXXXXX")
export WORK

# The supervisor mounts fusectl (/sys/fs/fuse/connections) when it is
# missing, as the product should; a test that caused that puts it back.
# Under ctest the fixture `fusectl` holds it for the whole run instead
# (LAYOUTD_FUSECTL_FIXTURE=1, and the fixture's state file there): tests
# run in parallel, and one test's teardown must not unmount it under
# another's daemons. The variable alone, with no fixture running (a test
# started by hand with ctest's environment), is not taken for one.
_fusectl_was_mounted=0
if { [ "${LAYOUTD_FUSECTL_FIXTURE:-0}" = 1 ] && [ -f "$LAYOUTD_BUILD_DIR/fusectl-fixture.state" ]; } ||
    findmnt -rn /sys/fs/fuse/connections >/dev/null 2>&1; then
    _fusectl_was_mounted=1
fi

track_pid() { _tracked_pids+=("$1"); }
on_cleanup() { _cleanup_hooks+=("$1"); }

# The loop devices that are ours below $1: backed by a file below it, or
# by a file on a filesystem that one of those holds (a loop over an image
# on a loop-mounted root, as the chaos suite makes): the second kind keeps
# its backing device's number after a lazy unmount, when its path no
# longer tells.
_loops_below() {
    local dir=$1 name majmin backdev back changed=1
    local -A ours=() devs=()
    local -a rows=()
    mapfile -t rows < <(losetup -n -O NAME,MAJ:MIN,BACK-MAJ:MIN,BACK-FILE 2>/dev/null || true)
    while [ "$changed" = 1 ]; do
        changed=0
        for row in "${rows[@]:-}"; do
            read -r name majmin backdev back <<<"$row"
            [ -n "$name" ] && [ -z "${ours[$name]:-}" ] || continue
            case "$back" in "$dir"/*) ;; *) [ -n "${devs[$backdev]:-}" ] || continue ;; esac
            ours[$name]=1 devs[$majmin]=1 changed=1
        done
    done
    for name in "${!ours[@]}"; do echo "$name"; done
}

# Whether loop device $1 is (still) one of _loops_below $2.
_loop_backed_below() {
    _loops_below "$2" | grep -qxF -- "$1"
}

# Unmounts everything below $1 (deepest first), detaches loops backed below it.
# Order matters: the loop devices are listed first, while their backing
# paths still read as below $1. Their filesystems are unmounted and they are
# detached before the filesystems that hold the backing files (a tmpfs root,
# say) are unmounted: otherwise that unmount is busy, falls back to a lazy
# one, and the loop's backing path then reads as "/images/..." (relative to
# the detached mount), so no later sweep can tell it was ours.
cleanup_below() {
    local dir=$1 m l back
    local -a loops=() mounts=()
    for h in "${_cleanup_hooks[@]:-}"; do [ -n "$h" ] && eval "$h" || true; done
    _cleanup_hooks=()
    for p in "${_tracked_pids[@]:-}"; do
        [ -n "$p" ] && kill -KILL "$p" 2>/dev/null || true
    done
    mapfile -t loops < <(_loops_below "$dir")
    # 1. Filesystems on those loop devices (and on any loop below $dir).
    # Each device is looked at again right before it is touched: under
    # ctest -j, another test may have detached it and attached its own file
    # to the same number since the list was made.
    for l in "${loops[@]:-}"; do
        [ -n "$l" ] && _loop_backed_below "$l" "$dir" || continue
        for m in $(findmnt -rn -S "$l" -o TARGET 2>/dev/null | sort -r); do
            umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
        done
    done
    # 2. The loop devices themselves.
    for l in "${loops[@]:-}"; do
        [ -n "$l" ] && _loop_backed_below "$l" "$dir" && losetup -d "$l" 2>/dev/null || true
    done
    # 3. Everything else below $dir, deepest first.
    for _ in 1 2 3; do
        mapfile -t mounts < <(findmnt -rn -o TARGET | awk -v d="$dir" 'index($0, d"/") == 1 || $0 == d' | sort -r)
        [ ${#mounts[@]} -eq 0 ] && break
        for m in "${mounts[@]}"; do
            umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
        done
    done
    for l in $(_loops_below "$dir"); do losetup -d "$l" 2>/dev/null || true; done
}

_teardown() {
    local rc=$?
    set +e
    cleanup_below "$WORK"
    if [ "$_fusectl_was_mounted" = 0 ] && findmnt -rn /sys/fs/fuse/connections >/dev/null 2>&1; then
        umount /sys/fs/fuse/connections 2>/dev/null || true
    fi
    if [ "${LAYOUTD_KEEP_WORK:-0}" = 1 ]; then
        log "keeping $WORK"
    else
        rm -rf "$WORK"
    fi
    exit $rc
}
trap _teardown EXIT
trap 'exit 130' INT TERM

# assert_eq EXPECTED ACTUAL MESSAGE
assert_eq() { [ "$1" = "$2" ] || fail "$3: expected '$1', got '$2'"; }
# wait_for SECONDS COMMAND...: polls a condition (the only place tests poll).
# COMMAND runs again each time: give a function, never `test "$(...)"`,
# whose "$(...)" the shell expands once, before the first try.
wait_for() {
    local t=$1; shift
    local end=$((SECONDS + t))
    while ! "$@"; do
        [ $SECONDS -ge $end ] && return 1
        sleep 0.1
    done
}
