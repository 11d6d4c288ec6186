#!/usr/bin/env bash
# Inputs that used to pass and should not, and things that were said but
# not done (issue "Nothing lost, nothing crashed", defects 9 and 10):
#  - validate refuses root: /, /etc, a root reached through a symlink to
#    /etc, workspace.user that does not exist, dir_mode 7777 / 0777, a
#    static workspace named like a volume; a reload with such a layout is
#    refused and the old layout keeps running;
#  - the API refuses a workspace named like a volume, labels with C1
#    controls or bidi overrides, and a request with two Content-Lengths;
#  - volumes are mounted nosuid,nodev;
#  - a reload that changes api.socket_mode and api.group applies them;
#  - a restart after a reload runs the layout's command as it is now;
#  - a workspace's package_store is what its running daemon has (a reload
#    that turns the store off changes it only at the daemon's restart);
#  - a clean stop removes the socket file.
TEST_NAME=agent-inputs
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/agent/lib-agent.sh"
require_root; require_loop; require_fuse; require_cmd curl; require_cmd mkfs.ext4
[ -x "$PY" ] || skip "needs /usr/bin/python3"

L=$WORK/layout.yaml
write_layout "$L" 1 4 3
validate() { "$LAYOUTCTL" validate "$1" 2>"$WORK/validate.err"; }
refused() { # FILE PATTERN
    if validate "$1"; then fail "validate accepted $(basename "$1")"; fi
    grep -q -- "$2" "$WORK/validate.err" || fail "$(basename "$1"): no '$2' in: $(cat "$WORK/validate.err")"
}
variant() { sed "$2" "$L" >"$WORK/$1.yaml"; echo "$WORK/$1.yaml"; }

log "validate refuses what the agent must not run with"
validate "$L" || fail "the base layout is invalid: $(cat "$WORK/validate.err")"
refused "$(variant root-slash "s|^root: .*|root: /|")" "root: / cannot be layoutd's root"
refused "$(variant root-etc "s|^root: .*|root: /etc|")" "it is a system directory"
ln -s /etc "$WORK/etc-link"
refused "$(variant root-link "s|^root: .*|root: $WORK/etc-link/layoutd|")" "resolves to /etc/layoutd"
refused "$(variant no-user "s|^  restart: on-failure|  user: no-such-user-layoutd\n  restart: on-failure|")" "no user 'no-such-user-layoutd'"
refused "$(variant mode-7777 "s|^  restart: on-failure|  dir_mode: \"7777\"\n  restart: on-failure|")" "setuid, setgid or sticky"
refused "$(variant mode-0777 "s|^  restart: on-failure|  dir_mode: \"0777\"\n  restart: on-failure|")" "world-writable"
refused "$(variant static-vol "s|^  restart: on-failure|  workspaces: [{id: content-0}]\n  restart: on-failure|")" "is the name of a volume"

start_agent "$L"
"$LAYOUTCTL" --socket "$SOCK" add i1 >/dev/null || fail "add i1"

log "a reload with a missing user is refused; the old layout keeps running"
cp "$L" "$WORK/layout.good"
cp "$WORK/no-user.yaml" "$L"
api POST /v1/reload >/dev/null; assert_eq 400 "$(st)" "reload with a missing user"
jget "$(api GET /v1/status)" "[p['message'] for p in d['problems'] if p['code']=='reload-refused'][0]" |
    has "no user 'no-such-user-layoutd'" || fail "the refused reload does not say why"
# ... and where: the value's file:line:col, as validate says it (issue 35.9).
jget "$(api GET /v1/status)" "[p['message'] for p in d['problems'] if p['code']=='reload-refused'][0]" |
    has -F "$L:19:9: workspace.user: no user" || fail "the refused reload does not say where: $(api GET /v1/status)"
validate "$WORK/no-user.yaml" && fail "validate accepted no-user.yaml"
grep -qF "$WORK/no-user.yaml:19:9: error: workspace.user: no user" "$WORK/validate.err" ||
    fail "validate does not say where the user is: $(cat "$WORK/validate.err")"
cp "$WORK/layout.good" "$L"
api POST /v1/reload >/dev/null; assert_eq 200 "$(st)" "reload back"
"$LAYOUTCTL" --socket "$SOCK" add i2 >/dev/null || fail "create after the refused reload"

log "the API refuses volume-like ids, display controls in labels, ambiguous framing"
for id in state-0 content-1; do
    api POST /v1/workspaces "{\"id\":\"$id\"}" >/dev/null; assert_eq 400 "$(st)" "create $id"
done
api POST /v1/workspaces '{"id":"l1","labels":{"x":"a\u009b31mb"}}' >/dev/null; assert_eq 400 "$(st)" "label with U+009B"
api POST /v1/workspaces '{"id":"l1","labels":{"x":"abc\u202edcba"}}' >/dev/null; assert_eq 400 "$(st)" "label with U+202E"
api POST /v1/workspaces '{"id":"l1","labels":{"x":"caf\u00e9 \u65e5\u672c"}}' >/dev/null; assert_eq 201 "$(st)" "label in UTF-8"
status=$("$PY" - "$SOCK" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
body = b'{"id":"cl1"}'
s.sendall(b"POST /v1/workspaces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          b"Content-Length: 12\r\nContent-Length: 2\r\n\r\n" + body)
print(s.recv(4096).split(b"\r\n", 1)[0].split(b" ")[1].decode())
PY
)
assert_eq 400 "$status" "two different Content-Lengths"
api GET /v1/workspaces/cl1 >/dev/null; assert_eq 404 "$(st)" "cl1 must not exist"

log "volumes are mounted nosuid,nodev"
for v in state-0 content-0; do
    opts=$(findmnt -no OPTIONS "$WORK/root/volumes/$v")
    grep -q nosuid <<<"$opts" && grep -q nodev <<<"$opts" || fail "$v mounted without nosuid,nodev: $opts"
done

log "a reload that changes api.socket_mode and api.group applies them"
sed -i "s|^  group: .*|  group: \"4\"\n  socket_mode: \"0640\"|" "$L"
api POST /v1/reload >/dev/null; assert_eq 200 "$(st)" "reload of api:"
assert_eq "640 0:4" "$(stat -c '%a %u:%g' "$SOCK")" "the socket's mode and owner after the reload"

log "a restart runs the command the layout says now"
sed -i "s|command: \[$WSFS, |command: [$WSFS, --threads=1, |" "$L"
api POST /v1/reload >/dev/null; assert_eq 200 "$(st)" "reload of the command"
"$LAYOUTCTL" --socket "$SOCK" restart i1 >/dev/null || fail "restart i1"
pid=$(jget "$(api GET /v1/workspaces/i1)" "d['daemon']['pid']")
tr '\0' ' ' <"/proc/$pid/cmdline" | has -- "--threads=1" || fail "i1 restarted with the old command: $(tr '\0' ' ' <"/proc/$pid/cmdline")"

log "package_store in the JSON is what the running daemon has, until its restart"
store_of() { jget "$(api GET "/v1/workspaces/$1")" "d['package_store']"; }
assert_eq "$WORK/mnt/i2/.layoutd-store" "$(store_of i2)" "i2's store before the reload"
sed -i "s|^  package_store: true|  package_store: false|" "$L"
grep -q "^  package_store: false" "$L" || fail "the layout has no package_store line to flip"
api POST /v1/reload >/dev/null; assert_eq 200 "$(st)" "reload of package_store"
assert_eq "$WORK/mnt/i2/.layoutd-store" "$(store_of i2)" "i2's running daemon keeps its store after the reload"
[ -d "$WORK/mnt/i2/.layoutd-store" ] || fail "i2's mount lost its store"
"$LAYOUTCTL" --socket "$SOCK" restart i2 >/dev/null || fail "restart i2"
assert_eq None "$(store_of i2)" "i2 restarted without a store"
[ -e "$WORK/mnt/i2/.layoutd-store" ] && fail "i2's restarted mount still shows a store"

log "a clean stop removes the socket file"
stop_agent
[ ! -e "$SOCK" ] || fail "the socket file $SOCK is left after the agent stopped"
log "PASS"
