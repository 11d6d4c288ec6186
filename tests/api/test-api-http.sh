#!/usr/bin/env bash
# The status API end to end, over a real Unix socket, against
# api-testserver (the API layer + sd-event loop + a fake in-memory engine).
# Covers: every route and its documented fields, error statuses, malformed
# HTTP, body limits, invalid JSON, 1,000 idle connections, a slowloris
# client, access control by SO_PEERCRED (setpriv, no user entries needed),
# 503 while starting, 507 when the pool is full, and the Prometheus text
# checked by the real parser.
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/api/lib-api.sh"
require_root   # setpriv --reuid needs it
require_cmd socat
require_cmd setpriv
"$PY3" -c 'import prometheus_client.parser' 2>/dev/null || skip "needs python3-prometheus-client"

chmod 0755 "$WORK"   # the unprivileged clients below must reach the socket
GRP=60777            # numeric group: no group entry needed
start_server main --mode 0666 --group "$GRP" --request-timeout 3 --idle-timeout 30 --max-body 65536
S=$WORK/main.sock

log "socket mode and owner"
assert_eq "666 0:$GRP" "$(stat -c '%a %u:%g' "$S")" "socket mode/owner"

log "every GET route answers JSON with the documented fields"
assert_eq 200 "$(req "$S" GET /v1/status)" "GET /v1/status"
json_check "$WORK/body" version state pid uptime_sec layout.path layout.hash volumes.total volumes.ok \
    volumes.degraded workspaces.total workspaces.running workspaces.failed problems
assert_eq 200 "$(req "$S" GET /v1/volumes)" "GET /v1/volumes"
json_check "$WORK/body" volumes.0.name volumes.0.role volumes.0.backend volumes.0.fs_type volumes.0.device \
    volumes.0.direct_io volumes.0.mountpoint volumes.0.size_bytes volumes.0.used_bytes volumes.0.free_bytes \
    volumes.0.flush_scope volumes.0.workspaces volumes.0.health
assert_eq 200 "$(req "$S" GET /v1/volumes/state-0)" "GET /v1/volumes/state-0"
assert_eq state-0 "$(json_get "$WORK/body" name)" "volume name"
assert_eq 200 "$(req "$S" GET /v1/workspaces)" "GET /v1/workspaces"
json_check "$WORK/body" workspaces.2.id workspaces.0.tenant workspaces.0.quota_bytes workspaces.0.labels \
    workspaces.0.volume workspaces.0.state_dir workspaces.0.mountpoint workspaces.0.flush_scope \
    workspaces.0.daemon.state workspaces.0.daemon.pid workspaces.0.daemon.restarts workspaces.0.created_at
assert_eq 200 "$(req "$S" GET /v1/workspaces/ws-1)" "GET /v1/workspaces/ws-1"
assert_eq ws-1 "$(json_get "$WORK/body" id)" "workspace id"
assert_eq 200 "$(req "$S" GET /v1/capacity)" "GET /v1/capacity"
json_check "$WORK/body" pools.0.role pools.0.volumes pools.0.size_bytes pools.0.used_bytes pools.0.free_bytes \
    pools.0.workspace_slots pools.0.workspace_slots_free workspace_slots_free
assert_eq 200 "$(req "$S" GET /v1/status/)" "trailing slash"
# HEAD: headers only
hdr=$(curl -sS -I --unix-socket "$S" http://localhost/v1/status)
grep -q '^HTTP/1.1 200' <<<"$hdr" || fail "HEAD /v1/status: $hdr"
grep -qi '^Content-Type: application/json' <<<"$hdr" || fail "HEAD content type"

log "errors: 404, 405 with Allow, 400 bad id"
expect_error "$S" GET /v1/nope 404 not_found
expect_error "$S" GET /v2/status 404 not_found
expect_error "$S" GET /v1/volumes/state-9 404 not_found
expect_error "$S" GET /v1/workspaces/nope 404 not_found
expect_error "$S" DELETE /v1/workspaces/nope 404 not_found
expect_error "$S" POST /v1/workspaces/nope/restart 404 not_found
expect_error "$S" GET /v1/workspaces/Bad_Id 400 bad_request
expect_error "$S" PUT /v1/status 405 method_not_allowed
expect_error "$S" GET /v1/reload 405 method_not_allowed
allow=$(curl -sS -D - -o /dev/null -X DELETE --unix-socket "$S" http://localhost/v1/workspaces | tr -d '\r' | sed -n 's/^Allow: //Ip')
assert_eq "GET, HEAD, POST" "$allow" "Allow header of 405"

log "POST /v1/workspaces creates (201 + Location), 409 on a duplicate, DELETE removes"
code=$(curl -sS -o "$WORK/body" -D "$WORK/headers" -w '%{http_code}' --unix-socket "$S" -X POST \
    -H 'Content-Type: application/json' \
    -d '{"id":"new-1","tenant":"acme","quota":"1G","labels":{"team":"red"}}' http://localhost/v1/workspaces)
assert_eq 201 "$code" "create"
json_check "$WORK/body" id volume state_dir mountpoint flush_scope daemon.state
assert_eq 1073741824 "$(json_get "$WORK/body" quota_bytes)" "quota parsed from 1G"
grep -qi '^Location: /v1/workspaces/new-1' "$WORK/headers" || fail "no Location header"
assert_eq 200 "$(req "$S" GET /v1/workspaces/new-1)" "created workspace is visible"
assert_eq red "$(json_get "$WORK/body" labels.team)" "labels kept"
expect_error "$S" POST /v1/workspaces 409 exists -d '{"id":"new-1"}'
assert_eq 202 "$(req "$S" POST /v1/workspaces/new-1/restart)" "restart"
assert_eq true "$(json_get "$WORK/body" restarting)" "restart answer"
assert_eq 200 "$(req "$S" GET /v1/workspaces/new-1)" "after restart"
assert_eq 1 "$(json_get "$WORK/body" daemon.restarts)" "restart counted"
expect_error "$S" DELETE '/v1/workspaces/new-1?destroy_data=maybe' 400 bad_request
assert_eq 200 "$(req "$S" DELETE '/v1/workspaces/new-1?destroy_data=true')" "delete"
assert_eq true "$(json_get "$WORK/body" data_destroyed)" "destroy_data passed through"
expect_error "$S" GET /v1/workspaces/new-1 404 not_found
assert_eq 200 "$(req "$S" POST /v1/reload)" "reload"
json_check "$WORK/body" reloaded changed layout_hash

log "invalid bodies: 400"
expect_error "$S" POST /v1/workspaces 400 invalid_json -d '{"id":'
expect_error "$S" POST /v1/workspaces 400 invalid_json -d '{"id":"a"} trailing'
expect_error "$S" POST /v1/workspaces 400 invalid_json
expect_error "$S" POST /v1/workspaces 400 bad_request -d '{"id":"a","quotas":1}'
expect_error "$S" POST /v1/workspaces 400 bad_request -d '{"id":"Not Valid"}'
expect_error "$S" POST /v1/workspaces 400 bad_request -d '[1,2]'

log "a 10 MB body: 413, with Content-Length and chunked"
head -c 10000000 /dev/zero | tr '\0' 'x' >"$WORK/big"
expect_error "$S" POST /v1/workspaces 413 body_too_large --data-binary @"$WORK/big"
expect_error "$S" POST /v1/workspaces 413 body_too_large -H 'Transfer-Encoding: chunked' --data-binary @"$WORK/big"
assert_eq 200 "$(req "$S" GET /v1/status)" "served after the big bodies"

log "malformed HTTP: 400 (or a closed connection), and the server goes on"
line=$("$PY3" "$API_CLIENTS" raw "$S" "$(printf 'GET /v1/status HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n' | od -An -tx1 | tr -d ' \n')")
assert_eq "HTTP/1.1 400 Bad Request" "$line" "header line without a colon"
line=$(printf 'GET /v1/status HTTP/1.1\r\nHost: x\r\nContent-Length: zz\r\n\r\n' | socat -t5 - "UNIX-CONNECT:$S" | head -n1 | tr -d '\r')
assert_eq "HTTP/1.1 400 Bad Request" "$line" "bad Content-Length"
line=$(printf 'POST /v1/workspaces HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\n' | socat -t5 - "UNIX-CONNECT:$S" | head -n1 | tr -d '\r')
assert_eq "HTTP/1.1 400 Bad Request" "$line" "bad chunk size"
# A request line MHD cannot parse at all: it closes without an answer.
# What matters is that nothing else is disturbed.
line=$(head -c 3000 /dev/urandom | socat -t5 - "UNIX-CONNECT:$S" | head -n1 | tr -d '\r' || true)
case "$line" in ""|"HTTP/1.1 400 Bad Request"|"HTTP/1.1 505 HTTP Version Not Supported") ;; *) fail "random bytes got '$line'";; esac
assert_eq 200 "$(req "$S" GET /v1/status)" "served after malformed requests"

log "1,000 idle connections, another client is served"
coproc IDLE { "$PY3" "$API_CLIENTS" idle "$S" 1000; }
track_pid "$IDLE_PID"
read -r -t 60 opened <&"${IDLE[0]}" || fail "idle clients did not connect"
assert_eq "OPEN 1000" "$opened" "idle connections"
assert_eq 200 "$(req "$S" GET /v1/status)" "GET /v1/status with 1,000 idle connections"
assert_eq 200 "$(req "$S" GET /metrics)" "GET /metrics with 1,000 idle connections"
conns=$(sed -n 's/^layoutd_api_connections_open \([0-9]*\)$/\1/p' "$WORK/body")
[ "${conns:-0}" -ge 1000 ] || fail "server reports $conns connections, expected >= 1000 (idle ones accepted)"
assert_eq 201 "$(req "$S" POST /v1/workspaces -d '{"id":"while-idle"}')" "POST with 1,000 idle connections"
eval "exec ${IDLE[1]}>&-"
wait "$IDLE_PID" 2>/dev/null || true

log "slowloris: one byte per second; others are served; it is cut off by the request timeout (3s)"
"$PY3" "$API_CLIENTS" slowloris "$S" >"$WORK/slow.out" &
SLOW=$!
track_pid "$SLOW"
assert_eq 200 "$(req "$S" GET /v1/status)" "served during slowloris"
assert_eq 200 "$(req "$S" GET /v1/workspaces)" "served during slowloris"
wait "$SLOW" || fail "slowloris: $(cat "$WORK/slow.out")"
grep -q '^CLOSED AFTER' "$WORK/slow.out" || fail "slowloris: $(cat "$WORK/slow.out")"
log "slowloris: $(cat "$WORK/slow.out")"
req "$S" GET /metrics >/dev/null
grep -Eq '^layoutd_api_request_timeouts_total [1-9]' "$WORK/body" || fail "timeout not counted"

log "access: reads for any peer that can connect, changes for root and the group"
as_user() { local uid=$1; shift; setpriv --reuid "$uid" --regid "$uid" --clear-groups -- "$@"; }
as_member() { local uid=$1; shift; setpriv --reuid "$uid" --regid "$uid" --groups "$GRP" -- "$@"; }
code=$(as_user 60001 curl -sS -o /dev/null -w '%{http_code}' --unix-socket "$S" http://localhost/v1/status)
assert_eq 200 "$code" "non-member GET"
for m_p in "POST /v1/workspaces" "DELETE /v1/workspaces/ws-0" "POST /v1/workspaces/ws-0/restart" "POST /v1/reload"; do
    set -- $m_p
    # The unprivileged curl cannot write below $WORK: the body comes back on stdout.
    out=$(as_user 60001 curl -sS -w '\n%{http_code}' --unix-socket "$S" -X "$1" -d '{"id":"nope"}' "http://localhost$2")
    assert_eq 403 "${out##*$'\n'}" "non-member $m_p"
    printf '%s' "${out%$'\n'*}" >"$WORK/body.403"
    assert_eq forbidden "$(json_get "$WORK/body.403" error.code)" "403 code"
done
assert_eq 404 "$(req "$S" GET /v1/workspaces/nope)" "refused create did not happen"
code=$(as_member 60002 curl -sS -o /dev/null -w '%{http_code}' --unix-socket "$S" http://localhost/v1/workspaces)
assert_eq 200 "$code" "member GET"
code=$(as_member 60002 curl -sS -o /dev/null -w '%{http_code}' --unix-socket "$S" -X POST -d '{"id":"by-member"}' http://localhost/v1/workspaces)
assert_eq 201 "$code" "supplementary-group member POST"
code=$(setpriv --reuid 60003 --regid "$GRP" --clear-groups -- curl -sS -o /dev/null -w '%{http_code}' --unix-socket "$S" -X DELETE http://localhost/v1/workspaces/by-member)
assert_eq 200 "$code" "primary-group member DELETE"

log "the socket's mode is the read gate: 0660 keeps non-members out entirely"
start_server strict --mode 0660 --group "$GRP" --quiet
rc=0
as_user 60001 curl -sS -o /dev/null --unix-socket "$WORK/strict.sock" http://localhost/v1/status 2>/dev/null || rc=$?
assert_eq 7 "$rc" "non-member cannot connect to a 0660 socket (curl: couldn't connect)"
code=$(as_member 60002 curl -sS -o /dev/null -w '%{http_code}' --unix-socket "$WORK/strict.sock" http://localhost/v1/status)
assert_eq 200 "$code" "member GET on the 0660 socket"
kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true
[ ! -e "$WORK/strict.sock" ] || fail "socket not removed at exit"

log "a stale socket is replaced; a non-socket in the way is refused"
"$PY3" -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])" "$WORK/stale.sock"
start_server stale --mode 0600 --quiet
assert_eq 200 "$(req "$WORK/stale.sock" GET /v1/status)" "served on the replaced stale socket"
echo data >"$WORK/file.sock"
"$API_SERVER" --socket "$WORK/file.sock" --quiet >/dev/null 2>"$WORK/file.log" && fail "started over a regular file"
assert_eq data "$(cat "$WORK/file.sock")" "regular file left alone"

log "503 while starting; 507 when the pool is full"
start_server starting --state starting --quiet
expect_error "$WORK/starting.sock" POST /v1/workspaces 503 not_ready -d '{"id":"x"}'
assert_eq 200 "$(req "$WORK/starting.sock" GET /v1/status)" "reads while starting"
start_server full --workspaces 3 --slots-per-volume 2 --quiet
assert_eq 201 "$(req "$WORK/full.sock" POST /v1/workspaces -d '{"id":"fill"}')" "last free slot"
expect_error "$WORK/full.sock" POST /v1/workspaces 507 pool_full -d '{"id":"one-too-many"}'

log "Prometheus text: content type, and the real parser reads it"
ctype=$(curl -sS -o "$WORK/metrics.txt" -w '%{content_type}' --unix-socket "$S" http://localhost/metrics)
case "$ctype" in "text/plain; version=0.0.4"*) ;; *) fail "metrics content type '$ctype'";; esac
"$PY3" - "$WORK/metrics.txt" <<'PY' || fail "metrics do not parse"
import sys
from prometheus_client.parser import text_string_to_metric_families
fams = {f.name: f for f in text_string_to_metric_families(open(sys.argv[1]).read())}
want = {
    "layoutd_volume_size_bytes": "gauge",
    "layoutd_volume_flush_probe_seconds": "histogram",
    "layoutd_workspace_daemon_restarts": "counter",
    "layoutd_api_requests": "counter",
    "layoutd_api_request_duration_seconds": "histogram",
    "layoutd_api_connections_open": "gauge",
    "layoutd_api_connections": "counter",
}
for name, typ in want.items():
    assert name in fams, "missing family %s (have %s)" % (name, sorted(fams))
    assert fams[name].type == typ, "%s is %s, want %s" % (name, fams[name].type, typ)
h = fams["layoutd_api_request_duration_seconds"]
buckets = [s for s in h.samples if s.name.endswith("_bucket") and s.labels["route"] == "status"]
assert buckets[-1].labels["le"] == "+Inf", buckets[-1]
counts = [s.value for s in buckets]
assert counts == sorted(counts), "buckets not cumulative: %s" % counts
count = [s.value for s in h.samples if s.name.endswith("_count") and s.labels["route"] == "status"][0]
assert count == counts[-1] and count >= 5, (count, counts)
reqs = {(s.labels["route"], s.labels["code"]): s.value for s in fams["layoutd_api_requests"].samples if s.name.endswith("_total")}
assert reqs.get(("workspace-create", "403"), 0) >= 1 and reqs.get(("none", "404"), 0) >= 1, reqs
print("metrics: %d families parsed" % len(fams))
PY

log "all API checks passed"
