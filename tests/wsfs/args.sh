#!/usr/bin/env bash
# Bad arguments and unusable directories: a non-zero exit and a message
# that names the problem, before anything is mounted.
TEST_NAME=wsfs-args
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/wsfs/lib.sh"

mkdir -p "$WORK/state" "$WORK/content" "$WORK/mnt"
touch "$WORK/file"

# expect_fail PATTERN [env...] -- args...: exits non-zero, says PATTERN.
expect_fail() {
    local pattern=$1 rc=0; shift
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
    env "${envs[@]}" "$WSFS" "$@" >"$WORK/out" 2>&1 || rc=$?
    [ "$rc" -ne 0 ] || fail "exit 0 for: $*"
    grep -q -- "$pattern" "$WORK/out" || fail "no '$pattern' in the message for '$*': $(cat "$WORK/out")"
    ! findmnt --mountpoint "$WORK/mnt" >/dev/null || fail "mounted anyway: $*"
}

S=(--state "$WORK/state")
C=(--content "$WORK/content")
expect_fail "--state DIR is required" -- "${C[@]}" "$WORK/mnt"
expect_fail "MOUNTPOINT is required" -- "${S[@]}" "${C[@]}"
expect_fail "exactly one MOUNTPOINT" -- "${S[@]}" "${C[@]}" "$WORK/mnt" "$WORK/mnt"
expect_fail "--state $WORK/nope" -- --state "$WORK/nope" "${C[@]}" "$WORK/mnt"
expect_fail "--state $WORK/file" -- --state "$WORK/file" "${C[@]}" "$WORK/mnt"
expect_fail "--content $WORK/file" -- "${S[@]}" --content "$WORK/content,$WORK/file" "$WORK/mnt"
expect_fail "MOUNTPOINT $WORK/nope" -- "${S[@]}" "${C[@]}" "$WORK/nope"
expect_fail "MOUNTPOINT $WORK/file: not a directory" -- "${S[@]}" "${C[@]}" "$WORK/file"
expect_fail "--commit: 'fsync' is not one of syncfs, fdatasync, none" -- --commit=fsync "${S[@]}" "${C[@]}" "$WORK/mnt"
expect_fail "--batch-records" -- --batch-records=0 "${S[@]}" "${C[@]}" "$WORK/mnt"
expect_fail "--batch-ms" -- --batch-ms=-5 "${S[@]}" "${C[@]}" "$WORK/mnt"
expect_fail "--threads" -- --threads=many "${S[@]}" "${C[@]}" "$WORK/mnt"
expect_fail "--clone-fd: 'x' is not on or off" -- --clone-fd=x "${S[@]}" "${C[@]}" "$WORK/mnt"
expect_fail "--clone-fd=on needs more than one thread" -- --clone-fd=on --threads=1 "${S[@]}" "${C[@]}" "$WORK/mnt"
expect_fail "--cas-threshold" -- --cas-threshold=12X "${S[@]}" "${C[@]}" "$WORK/mnt"
expect_fail "unrecognized option" -- --bogus "${S[@]}" "${C[@]}" "$WORK/mnt"
expect_fail "LAYOUTD_SHARDS=3 does not match the 1 content dir" LAYOUTD_SHARDS=3 -- "${S[@]}" "${C[@]}" "$WORK/mnt"
expect_fail "LAYOUTD_SHARDS=x" LAYOUTD_SHARDS=x -- "${S[@]}" "${C[@]}" "$WORK/mnt"
expect_fail "bad FUSE options" -- -o no_such_option "${S[@]}" "${C[@]}" "$WORK/mnt"

# A state filesystem without user xattrs (ramfs has none) is refused.
mkdir -p "$WORK/ramfs"
if mount -t ramfs ramfs "$WORK/ramfs" 2>/dev/null; then
    mkdir "$WORK/ramfs/state"
    expect_fail "does not take user xattrs" -- --state "$WORK/ramfs/state" "${C[@]}" "$WORK/mnt"
else
    log "no ramfs: skipping the xattr-less state check"
fi

# Sizes take binary suffixes, LAYOUTD_SHARDS may repeat the count, --help works.
"$WSFS" --help | grep -q -- "--cas-threshold" || fail "--help"
LAYOUTD_SHARDS=1 wsfs_start ok --cas-threshold=1MiB --batch-ms=0 --foreground
echo x > "$WORK/ok/mnt/x"
wsfs_stop ok "$WSFS_PID"
grep -q "cas-threshold=1048576" "$WORK/ok/log" || fail "1MiB not parsed: $(cat "$WORK/ok/log")"

# --clone-fd=on: each worker thread reads its own /dev/fuse fd (the
# session's and at least the first worker's clone), and it serves.
fuse_fds() { local n=0 f; for f in /proc/"$1"/fd/*; do [ "$(readlink "$f")" = /dev/fuse ] && n=$((n + 1)); done; echo "$n"; }
wsfs_start cfd --clone-fd=on --threads=4
writers=()
for i in $(seq 1 16); do echo "f$i" >"$WORK/cfd/mnt/f$i" & writers+=($!); done
wait "${writers[@]}" # (not the daemon: a bare wait would wait for it too)
for i in $(seq 1 16); do assert_eq "f$i" "$(cat "$WORK/cfd/mnt/f$i")" "f$i through --clone-fd=on"; done
[ "$(fuse_fds "$WSFS_PID")" -ge 2 ] || fail "--clone-fd=on: $(fuse_fds "$WSFS_PID") /dev/fuse fd(s), expected a clone per thread"
wsfs_stop cfd "$WSFS_PID"
grep -q "threads=4 .*clone-fd=on" "$WORK/cfd/log" || fail "--clone-fd=on not in the banner: $(cat "$WORK/cfd/log")"
wsfs_start nocfd
assert_eq 1 "$(fuse_fds "$WSFS_PID")" "/dev/fuse fds without --clone-fd"
wsfs_stop nocfd "$WSFS_PID"

# Without --content (a layout without a content pool): it serves, and a
# file above the CAS threshold stays whole in the state dir.
mkdir -p "$WORK/nopool/state" "$WORK/nopool/mnt"
"$WSFS" --state "$WORK/nopool/state" "$WORK/nopool/mnt" 2>"$WORK/nopool/log" &
pid=$!
track_pid "$pid"
wait_for 10 _wsfs_up "$pid" "$WORK/nopool/mnt" || { cat "$WORK/nopool/log"; fail "the pool-less daemon did not come up"; }
head -c 1M /dev/urandom >"$WORK/big"
cp "$WORK/big" "$WORK/nopool/mnt/big"
sync -f "$WORK/nopool/mnt"
cmp "$WORK/big" "$WORK/nopool/mnt/big" || fail "pool-less read back differs"
cmp "$WORK/big" "$WORK/nopool/state/big" || fail "pool-less: the file is not whole in the state dir"
grep -q "cas-threshold=0" "$WORK/nopool/log" || fail "pool-less daemon did not say the pool is off: $(cat "$WORK/nopool/log")"
wsfs_stop nopool "$pid"

# Without --stats-file (as a supervisor may run it): writes commit and a
# SIGTERM stops it cleanly.
mkdir -p "$WORK/nostats/state" "$WORK/nostats/mnt"
"$WSFS" --state "$WORK/nostats/state" --content "$WORK/content" "$WORK/nostats/mnt" 2>"$WORK/nostats/log" &
pid=$!
track_pid "$pid"
wait_for 10 _wsfs_up "$pid" "$WORK/nostats/mnt" || fail "no-stats daemon did not come up"
for i in 1 2 3; do echo "$i" > "$WORK/nostats/mnt/f$i"; done
assert_eq 3 "$(cat "$WORK/nostats/mnt/f3")" "no-stats read back"
wsfs_stop nostats "$pid"
log "ok"
