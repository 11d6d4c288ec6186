#!/usr/bin/env bash
# mkfs.xfs missing from PATH: a clean error for the xfs volume (rolled
# back: no file, no loop, no record entry), the ext4 volume up. Then an
# mkfs that fails: the error shows the tool's error line, not its banner;
# a failure that left the device blank is tried again, one that wrote a
# signature is not.
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/volumes/lib.sh"

mkdir -p "$WORK/bin"
for t in mkfs.ext4 resize2fs; do ln -s "$(command -v $t)" "$WORK/bin/$t"; done
write_layout loop-ext4 256MiB loop-xfs 320MiB

set +e
PATH="$WORK/bin" "$LAYOUTCTL" apply --layout "$LAYOUT" --root "$ROOT" >"$WORK/apply"
rc=$?
set -e
cat "$WORK/apply" >&2
assert_eq 1 "$rc" "apply exit status"
grep -q 'mkfs.xfs not found: install xfsprogs' "$WORK/apply" || fail "no clean message for missing mkfs.xfs"
assert_up state-0 ext4
[ ! -e "$(img content-0)" ] || fail "content-0.img left behind"
[ -z "$(loop_of content-0)" ] || fail "content-0 loop left behind"
grep -q '"content-0"' "$ROOT/layoutd-state.json" && fail "content-0 left in the record"

log "with mkfs.xfs back, apply completes"
if command -v mkfs.xfs >/dev/null; then
    lctl apply >/dev/null || fail "apply with mkfs.xfs failed"
    assert_up content-0 xfs
fi
command -v mkfs.xfs >/dev/null || { log "PASS (no mkfs.xfs: the failing-mkfs part skipped)"; exit 0; }

# fake_mkfs MODE: an mkfs.xfs that prints a banner on stdout after its error
# (as mkfs.btrfs does: stdout buffered, stderr not) and fails on its first
# call, leaving the device blank ("blank") or with a signature ("dirty").
fake_mkfs() {
    cat >"$WORK/bin/mkfs.xfs" <<EOS
#!/bin/bash
n=\$(cat "$WORK/mkfs-calls" 2>/dev/null || echo 0); echo \$((n + 1)) >"$WORK/mkfs-calls"
if [ "\$n" = 0 ]; then
    dev=\${!#}
    [ "$1" = dirty ] && mkfs.ext4 -q -F "\$dev" >/dev/null 2>&1
    echo "ERROR: cannot check mount status of \$dev: No such device" >&2
    printf 'banner line one\\nbanner line two\\nbanner line three\\nbanner line four\\n'
    exit 1
fi
exec $(command -v mkfs.xfs) "\$@"
EOS
    chmod +x "$WORK/bin/mkfs.xfs"
    rm -f "$WORK/mkfs-calls"
}
lctl teardown >/dev/null || fail "teardown failed"
ROOT=$WORK/root2
write_layout loop-ext4 256MiB loop-xfs 320MiB

log "mkfs fails once on a blank device: tried again, and the step says so"
fake_mkfs blank
PATH="$WORK/bin:$PATH" "$LAYOUTCTL" apply --layout "$LAYOUT" --root "$ROOT" >"$WORK/apply2" ||
    fail "apply failed although mkfs succeeded on its second try: $(cat "$WORK/apply2")"
assert_eq 2 "$(cat "$WORK/mkfs-calls")" "mkfs calls"
grep -q 'a later try: the first failed on the blank device: .*ERROR: cannot check mount status' "$WORK/apply2" ||
    fail "the step does not tell of the first failure and its error line: $(cat "$WORK/apply2")"
grep -q 'banner line' "$WORK/apply2" && fail "the message shows the banner, not the error: $(cat "$WORK/apply2")"
assert_up content-0 xfs
lctl teardown >/dev/null || fail "teardown failed"

log "mkfs fails after writing a signature: no second try, the error line shown"
ROOT=$WORK/root3
write_layout loop-ext4 256MiB loop-xfs 320MiB
fake_mkfs dirty
PATH="$WORK/bin:$PATH" "$LAYOUTCTL" apply --layout "$LAYOUT" --root "$ROOT" >"$WORK/apply3" &&
    fail "apply succeeded over a failed mkfs that left a signature"
assert_eq 1 "$(cat "$WORK/mkfs-calls")" "mkfs calls"
grep -q 'mkfs.xfs failed (status 1): ERROR: cannot check mount status' "$WORK/apply3" ||
    fail "the failure does not show mkfs's error line: $(cat "$WORK/apply3")"
[ ! -e "$(img content-0)" ] || fail "content-0.img left behind"
log "PASS"
