#!/usr/bin/env bash
# loop-btrfs on real loop devices: a filesystem that is one FsType row and
# one backend entry. Carve (mkfs.btrfs with our label and UUID), mount,
# write, reflink (FICLONE: why btrfs earns its place), the error counter
# its row points at, online grow under a writer (btrfs filesystem resize
# max: CAP_SYS_ADMIN only), teardown. Skips only when the kernel has no
# btrfs or mkfs.btrfs is not installed (Debian: btrfs-progs).
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/volumes/lib.sh"
if ! grep -qw btrfs /proc/filesystems; then
    modprobe btrfs 2>/dev/null || true
    grep -qw btrfs /proc/filesystems || skip "the kernel has no btrfs (not in /proc/filesystems, modprobe btrfs failed)"
fi
command -v mkfs.btrfs >/dev/null 2>&1 || skip "needs mkfs.btrfs (Debian: btrfs-progs)"
require_cmd btrfs

write_layout loop-btrfs 256MiB loop-btrfs 256MiB

log "plan: carve both as btrfs"
lctl plan >"$WORK/plan1"
grep -q '^+ state-0 .*format state-0 as btrfs' "$WORK/plan1" || fail "plan lacks btrfs format: $(cat "$WORK/plan1")"
grep -q '^+ content-0 .*format content-0 as btrfs' "$WORK/plan1" || fail "plan lacks content btrfs format"

log "apply"
lctl apply >"$WORK/apply1" || fail "apply failed: $(cat "$WORK/apply1")"
assert_up state-0 btrfs
assert_up content-0 btrfs
u=$(uuid_of state-0)
grep -q "$u" "$ROOT/layoutd-state.json" || fail "record lacks state-0's UUID $u"
assert_eq "ld-state-0" "$(blkid -p -s LABEL -o value "$(img state-0)")" "state-0 label"
alloc=$(du -k "$(img state-0)" | cut -f1)
[ "$alloc" -lt $((256 * 1024)) ] || fail "state-0.img is not sparse ($alloc KiB)"
assert_eq "No changes." "$(lctl plan)" "second plan"
# statfs has no inode count on btrfs: the reason its inode reserve is 0.
assert_eq 0 "$(stat -f -c %c "$(mnt state-0)")" "btrfs f_files"

log "the error counter the FsType row points at is there, and reads 0"
stats=/sys/fs/btrfs/$u/devinfo/1/error_stats
[ -r "$stats" ] || fail "no $stats (the row's errors.path)"
assert_eq 0 "$(awk '{s += $2} END {print s + 0}' "$stats")" "btrfs device errors"

log "write, and reflink (FICLONE)"
dd if=/dev/urandom of="$(mnt state-0)/data.bin" bs=1M count=16 status=none
cp --reflink=always "$(mnt state-0)/data.bin" "$(mnt state-0)/clone.bin" || fail "FICLONE refused on loop-btrfs"
sync
(cd "$(mnt state-0)" && sha256sum data.bin clone.bin) >"$WORK/sums"
cmp -s "$(mnt state-0)/data.bin" "$(mnt state-0)/clone.bin" || fail "clone differs"
# The clone shares its extents: btrfs counts them once.
shared=$(btrfs filesystem du -s --raw "$(mnt state-0)" | awk 'NR == 2 {print $3}')
[ "$shared" -ge $((16 * 1024 * 1024)) ] || fail "the clone shares no extents (shared: $shared bytes)"

log "grow online while written to"
write_layout loop-btrfs 512MiB loop-btrfs 256MiB
lctl plan >"$WORK/plan2"
grep -q '^~ state-0 .*grow state-0 from 256MiB to 512MiB.*btrfs filesystem resize max' "$WORK/plan2" ||
    fail "no btrfs grow: $(cat "$WORK/plan2")"
dd if=/dev/urandom of="$(mnt state-0)/during-grow.bin" bs=1M count=32 conv=fsync status=none &
writer=$!
track_pid $writer
lctl apply >"$WORK/apply2" || fail "grow apply failed: $(cat "$WORK/apply2")"
wait $writer || fail "writer failed during grow"
size=$(df -B1 --output=size "$(mnt state-0)" | tail -n1)
[ "$size" -gt $((400 * 1024 * 1024)) ] || fail "state-0 did not grow: $size bytes"
assert_eq "No changes." "$(lctl plan)" "plan after grow"
assert_up state-0 btrfs
(cd "$(mnt state-0)" && sha256sum -c --quiet "$WORK/sums") || fail "data changed by the grow"

log "teardown --destroy-data removes everything"
lctl teardown --destroy-data >"$WORK/td" || fail "teardown failed: $(cat "$WORK/td")"
assert_down state-0
assert_down content-0
[ ! -e "$(img state-0)" ] && [ ! -e "$(img content-0)" ] || fail "files left after --destroy-data"
[ ! -e "$ROOT/layoutd-state.json" ] || fail "record left after --destroy-data"
log "PASS"
