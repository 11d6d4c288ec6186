#!/usr/bin/env bash
# 100,000 files in one workspace with the daemon under RLIMIT_NOFILE 4096
# (the old daemon held an O_PATH fd per inode the kernel remembers and
# failed at its limit with EMFILE, then EBADF). Every file is created,
# read back and checked, then deleted, while the kernel keeps the inodes
# cached; the daemon's fd count, sampled throughout, stays under its fd
# bound (plus the fds it holds from the start: /dev/fuse, the state and
# content dirs, stdio).
TEST_NAME=wsfs-manyfiles
# Run by hand, find the tests dir from here (never run without common.sh).
: "${LAYOUTD_TESTS:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." \&\& pwd)}"
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/wsfs/lib.sh"
require_cmd prlimit

N=${MANYFILES_N:-100000}
BOUND=1024
WSFS_WRAP="prlimit --nofile=4096:4096 --" wsfs_start many --fd-cache=$BOUND --commit=none
pid=$WSFS_PID
m=$WORK/many/mnt
assert_eq 4096 "$(prlimit --pid "$pid" --nofile --noheadings --output SOFT)" "daemon soft RLIMIT_NOFILE"
base=$(fd_count "$pid")
log "daemon $pid holds $base fds at start; bound $BOUND"

# Sample the fd count (and the inodes the kernel holds) all along.
( while kill -0 "$pid" 2>/dev/null; do
      fd_count "$pid"
      stat_get many inodes >> "$WORK/inodes.samples"
      sleep 0.2
  done > "$WORK/fds.samples" ) &
sampler=$!
track_pid "$sampler"

/usr/bin/python3 - "$m" "$N" <<'PY' || fail "the workload failed"
import os, sys, time
root, n = sys.argv[1], int(sys.argv[2])
per = 1000
def path(i):
    return os.path.join(root, "d%03d" % (i // per), "f%06d" % i)
def content(i):
    return (b"file %d\n" % i) * (1 + i % 7)
t0 = time.monotonic()
for d in range((n + per - 1) // per):
    os.mkdir(os.path.join(root, "d%03d" % d))
for i in range(n):
    with open(path(i), "wb") as f:
        f.write(content(i))
t1 = time.monotonic()
bad = 0
for i in range(n):
    with open(path(i), "rb") as f:
        if f.read() != content(i):
            bad += 1
# A walk stats every file again (the kernel still holds the inodes).
seen = sum(len(files) for _, _, files in os.walk(root))
t2 = time.monotonic()
for i in range(n):
    os.unlink(path(i))
for d in range((n + per - 1) // per):
    os.rmdir(os.path.join(root, "d%03d" % d))
t3 = time.monotonic()
print("create %.1fs read+walk %.1fs delete %.1fs" % (t1 - t0, t2 - t1, t3 - t2), file=sys.stderr)
if bad or seen != n:
    print("bad=%d seen=%d of %d" % (bad, seen, n), file=sys.stderr)
    sys.exit(1)
PY
kill -USR1 "$pid"
sleep 0.3
kill "$sampler" 2>/dev/null || true
wait "$sampler" 2>/dev/null || true
max=$(sort -n "$WORK/fds.samples" | tail -1)
samples=$(wc -l < "$WORK/fds.samples")
log "fd count: max $max over $samples samples (start $base); $(cat "$WORK/many/stats.json")"
[ "$samples" -ge 5 ] || fail "too few fd samples ($samples)"
[ "$max" -le $((BOUND + base)) ] || fail "daemon held $max fds, over its bound $BOUND + $base at start"
# The run did stress the cache: the kernel held far more inodes than the
# limit allows fds (the old daemon's design would have hit EMFILE).
inodes=$(sort -n "$WORK/inodes.samples" | tail -1)
log "the kernel held up to $inodes inodes at once"
[ "${inodes:-0}" -gt 8192 ] || fail "the kernel held only ${inodes:-0} inodes: the test did not exceed the limit"
[ "$(stat_get many fd_cache_evictions)" -gt 0 ] || fail "the fd cache never evicted: the test did not exceed it"
assert_eq 0 "$(stat_get many fd_sheds)" "EMFILE sheds (the bound is under the limit)"
grep -qi "too many open files\|bad file descriptor" "$WORK/many/log" && fail "fd errors in the log: $(cat "$WORK/many/log")"
[ -z "$(ls -A "$m")" ] || fail "files left in the mount"
wsfs_stop many "$pid"
log "ok"
