# The device layer's udev path (udev_wait_for_device with udevd running),
# and the rest of the devices engineer's integration cases, under real udev.
. "$LAYOUTD_VM_HOME/guest/lib.sh"
[ -S /run/udev/control ] || fail "udevd is not running in the guest"
[ -x "$B/test-dev-integration" ] || skip "test-dev-integration not built"
cd /tmp
failed=()
for c in udev loop race probe mkfs mount fallback; do
    rc=0
    "$B/test-dev-integration" "$c" || rc=$?
    log "dev-$c rc=$rc"
    case $rc in 0|77) ;; *) failed+=("$c") ;; esac
done
[ ${#failed[@]} -eq 0 ] || fail "dev cases failed: ${failed[*]}"
