#!/usr/bin/env bash
# On a kernel without dm-vdo (this project's CI host has no device-mapper at
# all), the vdo backend must fail up front with -EOPNOTSUPP and the message
# "kernel has no dm-vdo target; load dm-vdo (modprobe dm-vdo)", and leave
# nothing behind (no backing file, no loop device). On a kernel that has
# dm-vdo this is covered, for real, by the VM suite (tests/vm/run).
. "$LAYOUTD_TESTS/lib/common.sh"
require_root
smoke="$LAYOUTD_BUILD_DIR/tests/vdo/vdo-smoke"
[ -x "$smoke" ] || fail "missing $smoke"

if "$smoke" check >"$WORK/check.out" 2>"$WORK/check.err"; then
    skip "this kernel has dm-vdo ($(cat "$WORK/check.out")); tests/vm/run covers the real path"
fi
rc=0; "$smoke" check 2>"$WORK/check.err" || rc=$?
assert_eq 95 "$rc" "check exit status (EOPNOTSUPP)"
grep -q 'kernel has no dm-vdo target; load dm-vdo (modprobe dm-vdo)' "$WORK/check.err" ||
    fail "check: message was: $(cat "$WORK/check.err")"

rc=0; "$smoke" up content-0 "$WORK/images/content-0.img" 4GiB 16GiB 2>"$WORK/up.err" || rc=$?
assert_eq 95 "$rc" "up exit status (EOPNOTSUPP)"
grep -q 'kernel has no dm-vdo target; load dm-vdo (modprobe dm-vdo)' "$WORK/up.err" ||
    fail "up: message was: $(cat "$WORK/up.err")"
[ ! -e "$WORK/images/content-0.img" ] || fail "up left a backing file behind"
if losetup -n -O BACK-FILE | grep -qF "$WORK/"; then fail "up left a loop device behind"; fi
log "vdo backend refuses cleanly: $(cat "$WORK/up.err")"

# Through layoutctl apply: the vdo-xfs content pool fails with that
# message, the loop-backed state pool comes up and works.
layoutctl="$LAYOUTD_BUILD_DIR/agent/layoutctl"
if [ -x "$layoutctl" ] && command -v mkfs.xfs >/dev/null && [ -e /dev/loop-control ]; then
    cat >"$WORK/layout.yaml" <<YAML
version: 1
root: $WORK/root
pools:
  state:
    backend: loop-ext4
    volume_size: 64MiB
    min_volumes: 1
    max_volumes: 2
    workspaces_per_volume: 4
  content:
    backend: vdo-xfs
    volume_size: 4GiB
    shards: 1
    vdo:
      logical_size: 16GiB
workspace:
  command: [/bin/true]
YAML
    rc=0
    "$layoutctl" apply --layout "$WORK/layout.yaml" >"$WORK/apply.out" 2>&1 || rc=$?
    cat "$WORK/apply.out" >&2
    [ "$rc" -ne 0 ] || fail "apply said ok although the vdo volume cannot come up"
    grep -q 'content-0' "$WORK/apply.out" || fail "apply does not mention content-0"
    grep -q 'kernel has no dm-vdo target; load dm-vdo (modprobe dm-vdo)' "$WORK/apply.out" ||
        fail "apply: no dm-vdo message (is the vdo-xfs row in the backend table?)"
    mnt="$WORK/root/volumes/state-0"
    findmnt -n "$mnt" >/dev/null || fail "state-0 is not mounted: the vdo failure blocked it"
    echo hello >"$mnt/probe" && sync -f "$mnt/probe" || fail "state-0 does not work"
    [ ! -e "$WORK/root/images/content-0.img" ] || fail "apply left content-0's backing file behind"
    "$layoutctl" teardown --layout "$WORK/layout.yaml" >/dev/null 2>&1 || true
else
    log "layoutctl or mkfs.xfs not available: apply part not run"
fi
