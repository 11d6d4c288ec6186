# dm-vdo for real, through src/vdo (vdo-smoke drives vdo_volume_up/stats/
# grow/down): a sparse backing file -> loop (direct I/O) -> vdoformat ->
# dm-vdo with udev sync -> mkfs.xfs -K -> a worktree-like corpus written K
# times with cp --reflink=never (XFS reflinks would leave VDO nothing to
# deduplicate) -> the savings must show in the stats.
. "$LAYOUTD_VM_HOME/guest/lib.sh"
data_mount
img=/srv/data/images/content-0.img
mnt=/mnt/content-0
K=${LAYOUTD_VM_VDO_COPIES:-3}
on_exit "umount $mnt 2>/dev/null; vdo-smoke down content-0 $img"

vdo-smoke check | tee check.out
log "target: $(kv check.out vdo_target)"

vdo-smoke up content-0 "$img" 6GiB 24GiB | tee up.out
[ "$(kv up.out created_file)" = 1 ] || fail "backing file not created"
[ "$(kv up.out formatted)" = 1 ] || fail "not formatted"
[ "$(kv up.out created)" = 1 ] || fail "dm target not created"
[ "$(kv up.out direct_io)" = 1 ] || log "NOTE: loop device is buffered (dio_fallback=$(kv up.out dio_fallback))"
node=$(kv up.out dm_node)
[ -b "$node" ] || fail "$node is not a block device"
# udev ran its rules for the new device (the dm cookie path).
udevadm info --query=property "$node" | grep -q '^DM_NAME=layoutd-content-0$' || fail "udev did not process $node"
[ -L /dev/disk/by-id/dm-name-layoutd-content-0 ] || fail "no udev symlink by-id"

# A second up adopts the running device.
vdo-smoke up content-0 "$img" 6GiB 24GiB >up2.out
[ "$(kv up2.out created)" = 0 ] && [ "$(kv up2.out formatted)" = 0 ] || fail "second up was not idempotent"

mkfs.xfs -K -q "$node"
mkdir -p "$mnt"
mount -o noatime "$node" "$mnt"
corpus=/usr/lib/x86_64-linux-gnu
for i in $(seq 1 "$K"); do
    cp -a --reflink=never "$corpus" "$mnt/worktree-$i"
done
sync
vdo-smoke stats content-0 | tee stats.out
[ "$(kv stats.out mode)" = normal ] || fail "mode is $(kv stats.out mode)"
[ "$(kv stats.out degraded)" = 0 ] || fail "degraded"
[ "$(kv stats.out has_message)" = 1 ] || fail "no stats message"
saving=$(kv stats.out saving_percent)
[ "$saving" -gt 0 ] || fail "saving percent is $saving after $K copies"
[ "$(kv stats.out dedupe_advice_valid)" -gt 0 ] || fail "no deduplication happened"
log "RESULT copies=$K corpus=$(du -sh --apparent-size "$corpus" | cut -f1) saving_percent=$saving" \
    "logical_used=$(kv stats.out logical_blocks_used) data_used=$(kv stats.out data_blocks_used)" \
    "overhead=$(kv stats.out overhead_blocks_used)"
dmsetup status layoutd-content-0
dmsetup table layoutd-content-0

# Grow the logical size online (reload + resume), then the filesystem.
vdo-smoke grow content-0 "$img" 32GiB | tee grow.out
[ "$(kv grow.out changed)" = 1 ] || fail "grow did not change anything"
vdo-smoke stats content-0 >stats2.out
[ "$(kv stats2.out logical_blocks)" = $((32 * 1024 * 1024 / 4)) ] || fail "logical blocks after grow: $(kv stats2.out logical_blocks)"
xfs_growfs "$mnt" >/dev/null
vdo-smoke grow content-0 "$img" 32GiB | grep -q changed=0 || fail "second grow changed something"

# Down and up again: the formatted volume comes back, not reformatted.
umount "$mnt"
vdo-smoke down content-0 "$img"
[ ! -e "$node" ] || fail "$node still there after down"
vdo-smoke up content-0 "$img" 6GiB 32GiB >up3.out
[ "$(kv up3.out formatted)" = 0 ] && [ "$(kv up3.out created)" = 1 ] || fail "restart: $(cat up3.out)"
mount "$node" "$mnt"
[ -d "$mnt/worktree-$K" ] || fail "data lost across down/up"
cmp -s "$corpus/libc.so.6" "$mnt/worktree-1/libc.so.6" || fail "data differs"
umount "$mnt"
vdo-smoke down content-0 "$img"
log "ok"
