#!/usr/bin/env bash
# Errors are the truth: each errno is forced for real on a backing
# filesystem made here, and every operation gets the same error through
# the mount as natively on the state dir (the control, run first: it also
# proves the condition holds). Never EBADF, never a different errno.
#
#   ENOSPC        a tiny ext4 volume, blocks and inodes used up
#   EDQUOT        XFS with user quota; the caller (nobody) over its limits
#                 (needs a kernel with quota support: not this machine's)
#   EROFS         a read-only remount; an ext4 error (errors=remount-ro)
#                 under a file open for writing
#   EIO           the volume's loop device's image sits on a FUSE mount
#                 whose daemon died (the block device fails every I/O)
#   ENAMETOOLONG  a 256-byte name
#   EMFILE        the daemon's RLIMIT_NOFILE lowered (prlimit) while running
#   CAS           a full content pool: files stay in the state dir, and
#                 the failure is logged once, not per file
#
# With the writeback cache (the default) a buffered write(2) is accepted
# into the page cache; the error comes from fsync(2) as itself, and from
# close(2) as the kernel reports writeback errors there (fuse_flush():
# ENOSPC as ENOSPC, others as EIO). --writeback-cache=off gives the error
# at write(2), as natively; both are checked.
TEST_NAME=wsfs-errno
# Run by hand, find the tests dir from here (never run without common.sh).
: "${LAYOUTD_TESTS:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." \&\& pwd)}"
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/wsfs/lib.sh"
require_loop
require_cmd mkfs.ext4
require_cmd prlimit
shopt -s extglob

NATIVE= MOUNT=
# same PATTERN OP ARGS...: '@' in ARGS is the backing dir, then the mount.
# Natively the probe must print PATTERN (a glob; the premise), and through
# the mount too.
same() {
    local want=$1 op=$2; shift 2
    local -a nat=() mnt=()
    local x n f
    for x; do nat+=("${x//@/$NATIVE}"); mnt+=("${x//@/$MOUNT}"); done
    n=$(${AS:-} $FSPROBE "$op" "${nat[@]}")
    f=$(${AS:-} $FSPROBE "$op" "${mnt[@]}")
    [[ $n == $want ]] || fail "premise: natively '$op $*' gave '$n', expected '$want'"
    [[ $f == $want ]] || fail "through the mount '$op $*' gave '$f' (natively '$n')"
    [[ $f != *EBADF* ]] || fail "EBADF from '$op $*'"
    log "$op: native '$n', mount '$f'"
}
# mount_only PATTERN OP ARGS...: the mount alone ('@' = the mount).
mount_only() {
    local want=$1 op=$2; shift 2
    local -a mnt=()
    local x f
    for x; do mnt+=("${x//@/$MOUNT}"); done
    f=$(${AS:-} $FSPROBE "$op" "${mnt[@]}")
    [[ $f == $want ]] || fail "through the mount '$op $*' gave '$f', expected '$want'"
    log "$op (mount): '$f'"
}

# mkvol NAME SIZE FS [mkfs options...]: a loop-backed filesystem at $WORK/NAME.
mkvol() {
    local name=$1 size=$2 fs=$3; shift 3
    truncate -s "$size" "$WORK/$name.img"
    "mkfs.$fs" -q "$@" "$WORK/$name.img" >/dev/null 2>&1 || fail "mkfs.$fs $name"
    mkdir -p "$WORK/$name"
    mount -o loop "$WORK/$name.img" "$WORK/$name" || fail "mount $name"
}
long=$(printf 'n%.0s' $(seq 1 250))   # fits (255 is ext4's limit)
toolong=$(printf 'L%.0s' $(seq 1 256))

# ---- ENAMETOOLONG (on $WORK's filesystem) ----
wsfs_start names --cas-threshold=0
NATIVE=$WORK/names/state MOUNT=$WORK/names/mnt
touch "$NATIVE/src"
same ENAMETOOLONG create "@/$toolong"
same ENAMETOOLONG mkdir "@/$toolong"
same ENAMETOOLONG symlink src "@/$toolong"
same ENAMETOOLONG link "@/src" "@/$toolong"
same ENAMETOOLONG rename "@/src" "@/$toolong"
wsfs_stop names "$WSFS_PID"

# ---- ENOSPC: a 24 MiB ext4 with 64 inodes, without reserved blocks ----
mkvol full 24M ext4 -b 4096 -m 0 -N 64 -O ^has_journal
mkdir -p "$WORK/full/state"
WSFS_CONTENT=$WORK/content wsfs_start nospc --state "$WORK/full/state" --cas-threshold=0 --xattrs
NATIVE=$WORK/full/state MOUNT=$WORK/nospc/mnt
printf 'data\n' > "$NATIVE/src"
printf 'data\n' > "$NATIVE/existing"
# A directory whose first block is full of long names: one more entry
# needs a new block (find how many fit, then fill a fresh one to that).
mkdir "$NATIVE/probe" "$NATIVE/d"
k=0
while [ "$(stat -c %s "$NATIVE/probe")" -le 4096 ]; do k=$((k + 1)); : > "$NATIVE/probe/$k$long"; done
rm -rf "$NATIVE/probe"
for i in $(seq 1 $((k - 1))); do ln "$NATIVE/src" "$NATIVE/d/$i$long"; done
[ "$(stat -c %s "$NATIVE/d")" -eq 4096 ] || fail "setup: d is $(stat -c %s "$NATIVE/d") bytes"
# Use up the blocks, then the inodes.
r=$($FSPROBE fill "$NATIVE/filler"); log "fill: $r"
[[ $r == ENOSPC* ]] || fail "could not fill the volume: $r"
i=0
while [ "$($FSPROBE create "$NATIVE/i$i")" = ok ]; do i=$((i + 1)); done
log "used up the inodes after $i more files; df: $(df -k --output=avail,iavail "$NATIVE" | tail -1)"
same ENOSPC create @/new
same ENOSPC mkdir @/newdir
same ENOSPC symlink "$(printf 't%.0s' $(seq 1 2000))" @/newlink
same ENOSPC link @/src "@/d/x$long"
same ENOSPC rename @/src "@/d/y$long"
same ENOSPC setxattr @/existing user.big 3000
same '*:ENOSPC*' append @/existing $((4 * 1024 * 1024))
same '*:ENOSPC*' write-close @/existing $((4 * 1024 * 1024))
wsfs_stop nospc "$WSFS_PID"
# Without the writeback cache, write(2) itself says ENOSPC.
WSFS_CONTENT=$WORK/content wsfs_start nospc --state "$WORK/full/state" --cas-threshold=0 --writeback-cache=off
same 'write:ENOSPC*' append @/existing $((4 * 1024 * 1024))
wsfs_stop nospc "$WSFS_PID"

# ---- CAS: the content pool is full; files stay in the state dir ----
mkvol cpool 16M ext4 -m 0 -O ^has_journal
WSFS_CONTENT=$WORK/cpool wsfs_start casfull --cas-threshold=64K --commit=fdatasync
r=$($FSPROBE fill "$WORK/cpool/filler"); [[ $r == ENOSPC* ]] || fail "could not fill the pool: $r"
head -c 200000 /dev/urandom > "$WORK/blob"
for i in $(seq 1 40); do { cat "$WORK/blob"; echo "$i"; } > "$WORK/casfull/mnt/f$i" || fail "write f$i"; done
wait_for 20 eval '[ "$(stat_get casfull cas_errors)" -ge 40 ]' || fail "CAS errors not counted: $(cat "$WORK/casfull/stats.json")"
for i in $(seq 1 40); do
    cmp <({ cat "$WORK/blob"; echo "$i"; }) "$WORK/casfull/mnt/f$i" || fail "f$i differs"
done
assert_eq 0 "$(stat_get casfull objects_stored)" "objects stored in a full pool"
# Each failed copy removed its temporary file (no space kept by them).
assert_eq 0 "$(find "$WORK/cpool/objects" -name '.tmp.*' | wc -l)" "temporary files left by failed copies"
n=$(grep -c 'content pool failed' "$WORK/casfull/log" || true)
[ "$n" -eq 1 ] || fail "$n log lines for 40 failed publishes: $(cat "$WORK/casfull/log")"
grep -q 'No space left on device' "$WORK/casfull/log" || fail "the log does not say ENOSPC: $(cat "$WORK/casfull/log")"
wsfs_stop casfull "$WSFS_PID"

# ---- EDQUOT: XFS user quota, the caller is nobody ----
quota_ok=0
if command -v mkfs.xfs >/dev/null && command -v xfs_quota >/dev/null && command -v setpriv >/dev/null; then
    truncate -s 320M "$WORK/quota.img"
    mkfs.xfs -q -f "$WORK/quota.img" || fail "mkfs.xfs"
    mkdir -p "$WORK/quota"
    mount -o loop,uquota "$WORK/quota.img" "$WORK/quota" 2>/dev/null && quota_ok=1
    # (a kernel without CONFIG_QUOTA, as this machine's, refuses uquota)
    [ "$quota_ok" = 1 ] || log "NOT CHECKED: EDQUOT (XFS refuses uquota: this kernel has no quota support)"
fi
if [ "$quota_ok" = 1 ]; then
    mkdir -p "$WORK/quota/state"
    chown nobody:nogroup "$WORK/quota/state"
    xfs_quota -x -c 'limit -u bhard=4m ihard=40 nobody' "$WORK/quota" || fail "xfs_quota limit"
    wsfs_start quota --state "$WORK/quota/state" --cas-threshold=0
    NATIVE=$WORK/quota/state MOUNT=$WORK/quota/mnt
    AS="setpriv --reuid=65534 --regid=65534 --clear-groups --"
    # blocks: natively write(2) fails; through the mount fsync(2) does
    # (writeback cache), or close(2) as EIO when nothing called fsync.
    same '*:EDQUOT*' write @/big1 $((8 * 1024 * 1024))
    same '*:EDQUOT*' write @/big2 $((1024 * 1024))
    # (close: the kernel's fuse_flush reports writeback errors other
    # than ENOSPC as EIO; a kernel that passed EDQUOT would be fine too)
    mount_only 'close:@(EIO|EDQUOT)' write-close @/big3 $((1024 * 1024))
    rm -f "$NATIVE"/big*
    # inodes: a create over the limit fails at once, as natively
    i=0
    while [ "$($AS $FSPROBE create "$NATIVE/q$i")" = ok ]; do i=$((i + 1)); done
    log "nobody is out of inodes after $i files"
    same EDQUOT create @/overq
    same EDQUOT mkdir @/overqdir
    same EDQUOT symlink x @/overqlink
    [ ! -e "$NATIVE/overq" ] || fail "an over-quota create left a file behind"
    wsfs_stop quota "$WSFS_PID"
    # Without the writeback cache write(2) itself says EDQUOT.
    rm -f "$NATIVE"/q*
    wsfs_start quota --state "$WORK/quota/state" --cas-threshold=0 --writeback-cache=off
    same 'write:EDQUOT*' write @/big4 $((8 * 1024 * 1024))
    rm -f "$NATIVE"/big*
    wsfs_stop quota "$WSFS_PID"
    AS=
fi

# ---- EROFS: a read-only remount ----
mkvol ro 64M ext4
mkdir -p "$WORK/ro/state/dir"
printf 'data\n' > "$WORK/ro/state/file"
wsfs_start erofs --state "$WORK/ro/state" --cas-threshold=0 --xattrs
NATIVE=$WORK/ro/state MOUNT=$WORK/erofs/mnt
cat "$MOUNT/file" > /dev/null
mount -o remount,ro "$WORK/ro" || fail "remount ro"
same EROFS create @/new
same EROFS mkdir @/newdir
same EROFS symlink x @/newlink
same EROFS link @/file @/file2
same EROFS rename @/file @/file3
same EROFS unlink @/file
same EROFS rmdir @/dir
same EROFS chmod @/file 755
same EROFS utime @/file 1000000000
same EROFS open-rw @/file
same EROFS setxattr @/file user.x 10
mount -o remount,rw "$WORK/ro" || fail "remount rw"
wsfs_stop erofs "$WSFS_PID"

# ---- EROFS: an ext4 error (errors=remount-ro) under files open for writing ----
dev=$(findmnt -n -o SOURCE --mountpoint "$WORK/ro")
trig=/sys/fs/ext4/$(basename "$dev")/trigger_fs_error
if [ -w "$trig" ]; then
    mount -o remount,errors=remount-ro "$WORK/ro" || fail "remount errors=remount-ro"
    wsfs_start erofs2 --state "$WORK/ro/state" --cas-threshold=0
    # Two writers, native and through the mount, each holding its file
    # open across the error.
    writer() { # FILE: writes, waits for $WORK/go, writes 1 MiB more and fsyncs
        exec /usr/bin/python3 - "$1" "$WORK/go" <<'PY'
import errno, os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b"before\n")
while not os.path.exists(sys.argv[2]):
    time.sleep(0.05)
res = "ok"
try:
    for _ in range(16):
        os.write(fd, b"a" * 65536)
    os.fsync(fd)
except OSError as e:
    res = errno.errorcode[e.errno]
try:
    os.close(fd)
except OSError as e:
    res += ",close:" + errno.errorcode[e.errno]
print(res)
PY
    }
    writer "$WORK/ro/state/native-w" > "$WORK/native-w.out" &
    w1=$!
    writer "$WORK/erofs2/mnt/mount-w" > "$WORK/mount-w.out" &
    w2=$!
    track_pid "$w1"; track_pid "$w2"
    wait_for 10 test -s "$WORK/ro/state/native-w" || fail "native writer did not start"
    wait_for 10 test -s "$WORK/erofs2/mnt/mount-w" || fail "mount writer did not start"
    echo "wsfs-errno test" > "$trig"
    # (the superblock is read-only now; the mount's own flags still say rw)
    wait_for 10 eval '[ "$($FSPROBE create "$WORK/ro/state/probe-ro")" = EROFS ]' || fail "ext4 did not go read-only"
    touch "$WORK/go"
    wait "$w1"; wait "$w2"
    n=$(cat "$WORK/native-w.out") f=$(cat "$WORK/mount-w.out")
    log "emergency read-only: native '$n', mount '$f'"
    [[ $n == EROFS* ]] || fail "premise: natively the write after the error gave '$n'"
    [[ $f == EROFS* ]] || fail "through the mount the write after the error gave '$f' (natively '$n')"
    kill -TERM "$WSFS_PID"; wait "$WSFS_PID" || true
else
    log "no $trig: the emergency read-only case is not checked"
fi

# ---- EMFILE: the daemon's limit lowered under it ----
# The files exist before the daemon starts: each first access through the
# mount is a lookup that needs an fd.
mkdir -p "$WORK/fds/state/d"
for i in $(seq 1 300); do echo "$i" > "$WORK/fds/state/d/f$i"; done
wsfs_start fds --cas-threshold=0 --fd-cache=1024
pid=$WSFS_PID
m=$WORK/fds/mnt
prlimit --pid "$pid" --nofile=96:96 || fail "prlimit"
# Every file is still reachable (cached fds are shed, never EBADF) ...
for i in $(seq 1 300); do [ "$(cat "$m/d/f$i")" = "$i" ] || fail "f$i after the limit was lowered"; done
for i in $(seq 301 400); do echo "$i" > "$m/d/f$i" || fail "create f$i under the lowered limit"; done
[ "$(stat_get fds fd_sheds)" -gt 0 ] || { kill -USR1 "$pid"; sleep 0.3; }
[ "$(stat_get fds fd_sheds)" -gt 0 ] || fail "no fds were shed: $(cat "$WORK/fds/stats.json")"
# ... and files held open by an application exhaust the daemon: the open
# that finds no fd gets EMFILE, the files already open keep working.
r=$($FSPROBE hold-open "$m/d" 200)
log "hold-open: $r"
[[ $r == "EMFILE opened="* ]] || fail "opening more files than the daemon may hold: '$r'"
[[ $r == *" bad=0 close_errors=0" ]] || fail "files that were open broke: '$r'"
# Afterwards everything works again.
for i in 1 150 400; do [ "$(cat "$m/d/f$i")" = "$i" ] || fail "f$i after EMFILE"; done
! grep -q "Bad file descriptor" "$WORK/fds/log" || fail "EBADF in the log"
wsfs_stop fds "$pid"

# ---- EIO: the volume's block device fails every I/O ----
# The volume's image lives on a FUSE mount (a layoutd-wsfs with no CAS);
# when that daemon dies, the kernel aborts its connection and the loop
# device's reads and writes fail: EIO, natively and through the mount.
wsfs_start backing --cas-threshold=0 --commit=none
bpid=$WSFS_PID
truncate -s 256M "$WORK/backing/mnt/img"
mkfs.ext4 -q "$WORK/backing/mnt/img" || fail "mkfs on the FUSE-backed image"
loopdev=$(losetup -f --show "$WORK/backing/mnt/img") || fail "losetup"
mkdir -p "$WORK/eio"
mount "$loopdev" "$WORK/eio" || fail "mount the FUSE-backed volume"
mkdir -p "$WORK/eio/state"
head -c 300000 /dev/urandom > "$WORK/eio/state/old-native"
head -c 300000 /dev/urandom > "$WORK/eio/state/old-mount"
sync
# Their pages leave the caches (the files', and the image's below the loop
# device), so reading them needs the device.
/usr/bin/python3 -c 'import os, sys
for p in sys.argv[1:]:
    fd = os.open(p, os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)' \
    "$WORK/eio/state/old-native" "$WORK/eio/state/old-mount" "$WORK/backing/mnt/img" "$loopdev"
wsfs_start eio --state "$WORK/eio/state" --cas-threshold=0
NATIVE=$WORK/eio/state MOUNT=$WORK/eio/mnt
kill -KILL "$bpid"; wait "$bpid" 2>/dev/null || true
n=$($FSPROBE write "$NATIVE/new-native" 1000000)
f=$($FSPROBE write "$MOUNT/new-mount" 1000000)
log "EIO write: native '$n', mount '$f'"
[[ $n == *:EIO* ]] || fail "premise: natively a write on the failed device gave '$n'"
[[ $f == *:EIO* ]] || fail "through the mount a write on the failed device gave '$f'"
n=$(/usr/bin/python3 -c 'import sys; open(sys.argv[1],"rb").read()' "$NATIVE/old-native" 2>&1 | tail -1) || true
f=$(/usr/bin/python3 -c 'import sys; open(sys.argv[1],"rb").read()' "$MOUNT/old-mount" 2>&1 | tail -1) || true
log "EIO read: native '$n', mount '$f'"
[[ $n == *"Input/output error"* ]] || fail "premise: natively an uncached read gave '$n'"
[[ $f == *"Input/output error"* ]] || fail "through the mount an uncached read gave '$f'"
kill -TERM "$WSFS_PID"; wait "$WSFS_PID" || true
umount "$WORK/eio" 2>/dev/null || umount -l "$WORK/eio"
losetup -d "$loopdev" 2>/dev/null || true
umount -l "$WORK/backing/mnt" 2>/dev/null || true
log "ok"
