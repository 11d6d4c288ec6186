#!/usr/bin/env bash
# The host filesystem under the content pool's sparse image fills up
# (what the chaos suite's host-full fault does to a whole agent): a store
# into the pool then fails at write-back, with EIO from the loop device.
# An object is named only once its data is durable, so the failed store
# leaves no object behind: a named object with bad data would be taken by
# the next store of the same content (deduplication) and that file's own
# copy punched. Here:
#   1. with the host full, two workspaces write the same 1 MiB file:
#      every store fails, no object is named, no temporary file is left,
#      both files read back as written after drop_caches;
#   2. with the space back, a third workspace stores that content: the
#      object is made, whole (its name is its sha256), and its stub reads
#      back as written.
TEST_NAME=wsfs-hostfull
: "${LAYOUTD_TESTS:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/wsfs/lib.sh"
require_cmd mkfs.xfs
require_cmd getfattr

# host (ext4, no reserve) -> sparse 512 MiB image -> loop, direct I/O -> XFS
wsfs_mkvol host 300M ext4 -m 0
truncate -s 512M "$WORK/host/content.img"
mkfs.xfs -q "$WORK/host/content.img" || fail "mkfs.xfs"
dev=$(losetup --find --show --direct-io=on "$WORK/host/content.img") || fail "losetup"
C=$WORK/host/c
mkdir -p "$C"
mount "$dev" "$C" || fail "mount the content volume"
objects() { find "$C/objects" -mindepth 2 -type f ! -name '.tmp.*' 2>/dev/null | wc -l; }
tmps() { find "$C/objects" -name '.tmp.*' 2>/dev/null | wc -l; }
is_stub() { getfattr --absolute-names -n user.wsfs.cas "$1" >/dev/null 2>&1; }
stat_ge() { [ "$(stat_get "$1" "$2")" -ge "$3" ]; }

head -c 1048576 /dev/urandom >"$WORK/src"
want=$(sha256sum <"$WORK/src" | cut -d' ' -f1)
declare -A PIDS
for w in a b c; do WSFS_CONTENT=$C wsfs_start "$w" --commit=fdatasync; PIDS[$w]=$WSFS_PID; done
[ "$(objects)" = 0 ] || fail "objects before the test"

# ---- 1. the host full ----
avail=$(df -B1 --output=avail "$WORK/host" | tail -1)
fallocate -l "$avail" "$WORK/host/filler" 2>/dev/null || true
head -c 64M /dev/zero >>"$WORK/host/filler" 2>/dev/null || true
[ "$(df -B1 --output=avail "$WORK/host" | tail -1)" -lt 1048576 ] || fail "the host filesystem did not fill"
for w in a b; do
    cp "$WORK/src" "$WORK/$w/mnt/f" && sync "$WORK/$w/mnt/f" || fail "$w: write and fsync into the state dir"
    # the store runs after the release; it fails at the object's fdatasync
    wait_for 30 stat_ge "$w" cas_errors 1 || fail "$w: no failed store counted: $(cat "$WORK/$w/stats.json")"
done
[ "$(objects)" = 0 ] || fail "a failed store left $(objects) named object(s): $(find "$C/objects" -type f)"
[ "$(tmps)" = 0 ] || fail "a failed store left $(tmps) temporary file(s)"
echo 3 >/proc/sys/vm/drop_caches
for w in a b; do
    ! is_stub "$WORK/$w/state/f" || fail "$w: f became a stub although its store failed"
    got=$(sha256sum <"$WORK/$w/mnt/f" | cut -d' ' -f1)
    assert_eq "$want" "$got" "$w/f after the failed stores"
done
log "ok: with the host full, the stores failed, no object was named, both files read back whole"

# ---- 2. the space back ----
rm -f "$WORK/host/filler"
cp "$WORK/src" "$WORK/c/mnt/f" && sync "$WORK/c/mnt/f" || fail "c: write"
wait_for 30 is_stub "$WORK/c/state/f" || fail "c: f did not become a stub with the space back: $(cat "$WORK/c/stats.json")"
[ "$(objects)" = 1 ] || fail "expected 1 object, found $(objects)"
obj=$(find "$C/objects" -mindepth 2 -type f ! -name '.tmp.*')
echo 3 >/proc/sys/vm/drop_caches
assert_eq "$(basename "$obj")" "$(sha256sum <"$obj" | cut -d' ' -f1)" "the object's name against its data"
assert_eq "$want" "$(sha256sum <"$WORK/c/mnt/f" | cut -d' ' -f1)" "c/f read through its stub"
log "ok: with the space back, the object was made whole and the stub reads back"
for w in a b c; do wsfs_stop "$w" "${PIDS[$w]}"; done
