# The host's volume integration tests (tests/volumes/test-volumes-*.sh:
# apply, drift, ENOSPC, foreign signatures, no mkfs.xfs) under real udev,
# with the packaged layoutctl. On the CI host they run without udevd; here
# udev probes every new loop device and filesystem while they run, which is
# the race the device layer has to survive.
. "$LAYOUTD_VM_HOME/guest/lib.sh"
[ -S /run/udev/control ] || fail "udevd is not running in the guest"
command -v layoutctl >/dev/null || skip "layoutctl not installed"
t=$LAYOUTD_VM_HOME/tests
ls "$t"/volumes/test-volumes-*.sh >/dev/null 2>&1 || skip "host tests not copied into the guest"
export LAYOUTD_TESTS=$t LAYOUTD_SOURCE_DIR=$LAYOUTD_VM_HOME LAYOUTD_BUILD_DIR=/nonexistent
export LAYOUTCTL=/usr/bin/layoutctl
failed=()
for s in "$t"/volumes/test-volumes-*.sh; do
    name=$(basename "$s" .sh)
    rc=0
    bash "$s" >"$name.out" 2>&1 || rc=$?
    log "$name rc=$rc$([ $rc = 77 ] && echo " ($(tail -n1 "$name.out"))")"
    case $rc in
        0|77) ;;
        *) failed+=("$name"); tail -n 30 "$name.out" ;;
    esac
done
log "RESULT host_volume_tests=$(ls "$t"/volumes/test-volumes-*.sh | wc -l) failed=${#failed[@]}"
[ ${#failed[@]} -eq 0 ] || fail "failed under real udev: ${failed[*]}"
