#!/usr/bin/env bash
# layoutctl validate: the shipped layouts pass (exit 0); the acceptance
# fixtures fail with exit 1 and the exact file:line:col: error: lines;
# usage errors exit 2; --json and --show produce what they promise.
. "$LAYOUTD_TESTS/lib/common.sh"

ctl=${LAYOUTCTL:-$LAYOUTD_BUILD_DIR/agent/layoutctl}
[ -x "$ctl" ] || fail "layoutctl not built at $ctl"
fx=$LAYOUTD_SOURCE_DIR/tests/fixtures/layouts
cd "$LAYOUTD_SOURCE_DIR"

# 1. every shipped layout is valid
"$ctl" validate layouts/*.yaml >"$WORK/out" 2>"$WORK/err" || fail "layouts/*.yaml: exit $? ($(cat "$WORK/err"))"
[ "$(grep -c ': valid$' "$WORK/out")" -eq "$(ls layouts/*.yaml | wc -l)" ] || fail "not every layout said valid"
[ ! -s "$WORK/err" ] || fail "stderr not empty for valid layouts"

# 2. one fixture, one exact error line, exit 1
expect_error() { # file expected-line
    local file=$1 want=$2 rc=0
    "$ctl" validate "$file" >"$WORK/out" 2>"$WORK/err" || rc=$?
    [ "$rc" -eq 1 ] || fail "$file: exit $rc, expected 1"
    grep -qxF -- "$want" "$WORK/err" || { cat "$WORK/err" >&2; fail "$file: missing line: $want"; }
}
expect_error "$fx/misspelled-key.yaml" \
    "$fx/misspelled-key.yaml:6:5: error: unknown key 'workspace_per_volume' in pool 'state'; did you mean 'workspaces_per_volume'?"
expect_error "$fx/size-parsecs.yaml" \
    "$fx/size-parsecs.yaml:4:18: error: volume_size: invalid size '12 parsecs': expected a whole number of bytes, optionally followed by one of KiB, MiB, GiB, TiB (or K, M, G, T; all binary)"
expect_error "$fx/vdo-key-on-ext4.yaml" \
    "$fx/vdo-key-on-ext4.yaml:6:5: error: 'compression' is a VDO option: it belongs under 'vdo:' of a pool with backend vdo-xfs (this pool's backend is loop-ext4)"
expect_error "$fx/duplicate-key.yaml" \
    "$fx/duplicate-key.yaml:6:5: error: duplicate key 'volume_size' in pool 'state' (first given at line 4, column 5)"
expect_error "$fx/empty.yaml" "$fx/empty.yaml: error: the file is empty; expected a layout (a mapping starting with 'version: 1')"

# 3. a valid and an invalid file together: exit 1, the valid one still reported
rc=0
"$ctl" validate layouts/default.yaml "$fx/duplicate-key.yaml" >"$WORK/out" 2>"$WORK/err" || rc=$?
[ "$rc" -eq 1 ] || fail "mixed: exit $rc"
grep -q '^layouts/default.yaml: valid$' "$WORK/out" || fail "mixed: default.yaml not reported valid"

# 4. unreadable file: exit 1
rc=0; "$ctl" validate "$WORK/nope.yaml" 2>/dev/null || rc=$?
[ "$rc" -eq 1 ] || fail "missing file: exit $rc"

# 4b. a layout directory: the one *.yaml in it; two is an error
mkdir "$WORK/layouts.d"
cp layouts/default.yaml "$WORK/layouts.d/host.yaml"
"$ctl" validate "$WORK/layouts.d" | grep -qx "$WORK/layouts.d/host.yaml: valid" || fail "layouts.d with one file"
cp layouts/dev-dir.yaml "$WORK/layouts.d/other.yaml"
rc=0; "$ctl" validate "$WORK/layouts.d" >/dev/null 2>"$WORK/err" || rc=$?
[ "$rc" -eq 1 ] || fail "layouts.d with two files: exit $rc"
grep -q "more than one layout" "$WORK/err" || fail "layouts.d with two files: message"

# 5. usage errors: exit 2
for args in "" "validate" "validate --bogus x" "frobnicate" "--bogus"; do
    rc=0; "$ctl" $args >/dev/null 2>&1 || rc=$?
    [ "$rc" -eq 2 ] || fail "'layoutctl $args': exit $rc, expected 2"
done
"$ctl" --help | grep -q 'Exit status' || fail "--help does not document exit codes"
"$ctl" --version | grep -q '^layoutctl ' || fail "--version"
"$ctl" validate --help | grep -q -- '--show' || fail "validate --help"

# 6. --json: an array with the promised fields
"$ctl" validate --json layouts/default.yaml "$fx/misspelled-key.yaml" >"$WORK/json" 2>"$WORK/err" && fail "--json: exit 0"
/usr/bin/python3 - "$WORK/json" "$fx/misspelled-key.yaml" <<'PY' || fail "--json output"
import json, sys
a = json.load(open(sys.argv[1]))
assert isinstance(a, list) and len(a) == 2, a
assert a[0]["file"] == "layouts/default.yaml" and a[0]["valid"] is True and a[0]["errors"] == []
assert a[0]["layout"]["pools"]["state"]["volume_size"] == 512 * 1024 * 1024
assert a[1]["file"] == sys.argv[2] and a[1]["valid"] is False and a[1]["layout"] is None
e = a[1]["errors"]
assert len(e) == 1 and e[0]["line"] == 6 and e[0]["column"] == 5 and "workspaces_per_volume" in e[0]["message"], e
PY
# global --json works the same
"$ctl" --json validate layouts/default.yaml | /usr/bin/python3 -c 'import json,sys; assert json.load(sys.stdin)[0]["valid"]' \
    || fail "global --json"

# 7. --show prints a normalised layout that validates again
"$ctl" validate --show layouts/ext4-dio.yaml >"$WORK/show.yaml" || fail "--show: exit $?"
grep -q 'volume_size: "8GiB"' "$WORK/show.yaml" || fail "--show lacks the state volume size"
"$ctl" validate "$WORK/show.yaml" >/dev/null || fail "--show output does not validate"

# 8. what only the host can refuse (engine_check_host) names the key's
#    position too: an unknown user and group, a root that is a symlink to
#    /etc (and no second error for the mount_root that follows it), a
#    mount_root that resolves into a system tree.
ln -s /etc "$WORK/etc-link"
mkdir -p "$WORK/host"; ln -s /usr "$WORK/host/usr-link"
f=$WORK/host.yaml
printf '%s\n' "version: 1" "root: $WORK/etc-link" "pools:" "  state: {backend: dir}" "workspace:" \
    "  user: no-such-user-layoutd" "  group: \"no-such-group-layoutd\"" >"$f"
rc=0; "$ctl" validate "$f" >"$WORK/out" 2>"$WORK/err" || rc=$?
[ "$rc" -eq 1 ] || fail "host checks: exit $rc, expected 1"
want() { grep -qxF -- "$1" "$WORK/err" || { cat "$WORK/err" >&2; fail "host checks: missing line: $1"; }; }
want "$f:2:7: error: root: $WORK/etc-link resolves to /etc, which cannot be used: it is a system directory"
want "$f:6:9: error: workspace.user: no user 'no-such-user-layoutd' on this host: every workspace's daemon would fail to start; create it first or name another"
want "$f:7:10: error: workspace.group: no group 'no-such-group-layoutd' on this host: every workspace's daemon would fail to start; create it first or name another"
[ "$(grep -c ': error: ' "$WORK/err")" -eq 3 ] || { cat "$WORK/err" >&2; fail "host checks: 3 errors expected"; }
printf '%s\n' "version: 1" "root: $WORK/host/root" "pools:" "  state: {backend: dir}" "workspace:" \
    "  mount_root: $WORK/host/usr-link/ws" >"$f"
rc=0; "$ctl" validate "$f" >"$WORK/out" 2>"$WORK/err" || rc=$?
[ "$rc" -eq 1 ] || fail "mount_root host check: exit $rc, expected 1"
want "$f:6:15: error: workspace.mount_root: $WORK/host/usr-link/ws resolves to /usr/ws, which cannot be used: it is a system directory"
# --json carries the same positions.
"$ctl" validate --json "$f" >"$WORK/json" 2>/dev/null && fail "--json host check: exit 0"
/usr/bin/python3 - "$WORK/json" <<'PY' || fail "--json host check positions"
import json, sys
e = json.load(open(sys.argv[1]))[0]["errors"]
assert len(e) == 1 and e[0]["line"] == 6 and e[0]["column"] == 15 and "mount_root" in e[0]["message"], e
PY
log "ok"
