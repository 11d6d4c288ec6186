#!/usr/bin/env bash
# api.readonly_socket for real: the agent serves a second socket where
# every read works and every change is 403, whoever connects (root
# included); its mode lets a user outside the group read; the main
# socket still takes changes; layoutctl and the event stream work on it.
# api.metrics_listen: GET /metrics over TCP on loopback, and nothing else.
TEST_NAME=agent-readonly
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/agent/lib-agent.sh"
require_root; require_loop; require_fuse; require_cmd curl; require_cmd mkfs.ext4; require_cmd setpriv
[ -x "$PY" ] || skip "needs /usr/bin/python3"
[ -x "$WSFS" ] || fail "reference daemon not built: $WSFS"

RO=$WORK/ro/api-ro.sock
# nobody must reach both sockets' directories: what stops it is the mode.
chmod 0711 "$WORK"
L=$WORK/layout.yaml
write_layout "$L" 1 2 3
printf '  readonly_socket: %s\n' "$RO" >>"$L"
# The opt-in TCP listener for Prometheus (issue 39), on a free loopback port.
PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf '  metrics_listen: "127.0.0.1:%s"\n' "$PORT" >>"$L"
"$LAYOUTCTL" validate "$L" >/dev/null || fail "layoutctl validate refuses readonly_socket or metrics_listen"
start_agent "$L"
grep -q "serving GET /metrics on 127.0.0.1:$PORT" "$AGENT_LOG" || fail "the agent does not say it serves /metrics on TCP: $(grep -i metrics "$AGENT_LOG")"
tcp() { curl -s --max-time 10 -o "$WORK/tcp.out" -w '%{http_code}' -X "$1" "http://127.0.0.1:$PORT$2"; }
assert_eq 200 "$(tcp GET /metrics)" "GET /metrics on the metrics listener"
grep -q '^layoutd_volume_workspaces{' "$WORK/tcp.out" || fail "the metrics listener's /metrics: $(head -c 300 "$WORK/tcp.out")"
for path in /v1/status /v1/workspaces /v1/volumes; do
    assert_eq 403 "$(tcp GET "$path")" "GET $path on the metrics listener (figures only)"
done
assert_eq 403 "$(tcp POST /v1/reload)" "POST /v1/reload on the metrics listener"
grep -q "metrics listener" "$WORK/tcp.out" || fail "the 403 does not say why: $(cat "$WORK/tcp.out")"
# A value that is not an address is refused with its position.
cp "$L" "$WORK/bad.yaml"
sed -i "s|metrics_listen: .*|metrics_listen: \"localhost:9\"|" "$WORK/bad.yaml"
rc=0; "$LAYOUTCTL" validate "$WORK/bad.yaml" >"$WORK/bad.out" 2>&1 || rc=$?
assert_eq 1 "$rc" "validate of a metrics_listen that is a name"
grep -q "bad.yaml:[0-9]*:[0-9]*: .*metrics_listen" "$WORK/bad.out" || fail "the refusal: $(cat "$WORK/bad.out")"
[ -S "$RO" ] || fail "no read-only socket at $RO"
assert_eq 666 "$(stat -c %a "$RO")" "the read-only socket's default mode"
grep -q "API listening read-only on $RO" "$AGENT_LOG" || fail "the agent does not say it listens read-only"

ro() { # ro METHOD PATH [BODY] [--as-nobody]: prints the body, then the status on its own line
    local pre=()
    [ "${4:-}" = --as-nobody ] && pre=(setpriv --reuid=65534 --regid=65534 --clear-groups)
    "${pre[@]}" curl -s -S --max-time 30 --unix-socket "$RO" -X "$1" -w '\n%{http_code}' \
        ${3:+-H 'Content-Type: application/json' --data "$3"} "http://layoutd$2"
}
status_of() { printf '%s' "${1##*$'\n'}"; }
body_of() { printf '%s' "${1%$'\n'*}"; }

# Reads: all of them, as root and as a user in no group.
for path in /v1/status /v1/health /v1/volumes /v1/volumes/state-0 /v1/workspaces /v1/capacity /v1/operations /metrics; do
    out=$(ro GET "$path"); assert_eq 200 "$(status_of "$out")" "GET $path on the read-only socket"
done
out=$(ro GET /v1/capacity "" --as-nobody); assert_eq 200 "$(status_of "$out")" "GET /v1/capacity as nobody"
jget "$(body_of "$out")" "d['workspace_slots_free']" >/dev/null || fail "capacity as nobody: $out"
if setpriv --reuid=65534 --regid=65534 --clear-groups curl -s --max-time 5 --unix-socket "$SOCK" http://layoutd/v1/status >/dev/null; then
    fail "nobody could connect to the main socket (0660): the test proves nothing"
fi

# Changes: 403 as root, and nothing changes.
out=$(ro POST /v1/workspaces '{"id":"ro-1"}'); assert_eq 403 "$(status_of "$out")" "POST on the read-only socket, as root"
jget "$(body_of "$out")" "d['error']['message']" | has readonly_socket || fail "403 does not name the socket: $out"
api GET /v1/workspaces/ro-1 >/dev/null; assert_eq 404 "$(st)" "the refused create made nothing"
api POST /v1/workspaces '{"id":"ws-1"}' >/dev/null; assert_eq 201 "$(st)" "the main socket still takes changes"
for req in "DELETE /v1/workspaces/ws-1?destroy_data=true" "POST /v1/workspaces/ws-1/restart" "POST /v1/reload" \
           "POST /v1/gc" "POST /v1/shutdown"; do
    out=$(ro ${req% *} "${req#* }"); assert_eq 403 "$(status_of "$out")" "$req on the read-only socket"
done
out=$(ro POST /v1/workspaces '{"id":"ro-2"}' --as-nobody); assert_eq 403 "$(status_of "$out")" "POST as nobody"
assert_eq running "$(jget "$(api GET /v1/workspaces/ws-1)" "d['daemon']['state']")" "ws-1 untouched by the refused calls"

# layoutctl reads through it; its changing verbs are refused with the API's message.
"$LAYOUTCTL" --socket "$RO" status >/dev/null || fail "layoutctl status on the read-only socket"
"$LAYOUTCTL" --socket "$RO" workspaces | has ws-1 || fail "layoutctl workspaces on the read-only socket"
if "$LAYOUTCTL" --socket "$RO" rm ws-1 2>"$WORK/rm.err"; then fail "layoutctl rm went through the read-only socket"; fi
has 403 <"$WORK/rm.err" || fail "layoutctl rm: $(cat "$WORK/rm.err")"
# The event stream is a read: it works there, and sees a change made on the main socket.
curl -s -N --max-time 20 --unix-socket "$RO" 'http://layoutd/v1/events' >"$WORK/events" &
ev=$!; track_pid "$ev"
wait_for 10 grep -q . "$WORK/events" || true # the stream may send nothing until an event
api DELETE /v1/workspaces/ws-1?destroy_data=true >/dev/null; assert_eq 200 "$(st)" "remove ws-1 on the main socket"
wait_for 10 grep -q '"workspace.removed"' "$WORK/events" || fail "the read-only event stream missed the removal"
kill "$ev" 2>/dev/null || true
stop_agent
log "OK: reads on the read-only socket (also as nobody), every change refused there with 403"
