#!/usr/bin/env bash
# layoutctl's client verbs against api-testserver: tables, --json (the
# API's JSON as is), add/rm/restart/reload changing the fake engine, API
# errors (exit 1), usage errors (exit 2), and "layoutd is not running"
# (exit 3) for a missing socket and for a socket nobody listens on.
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/api/lib-api.sh"
LAYOUTCTL=$LAYOUTD_BUILD_DIR/agent/layoutctl
[ -x "$LAYOUTCTL" ] || fail "$LAYOUTCTL not built"

start_server ctl --mode 0600 --quiet
S=$WORK/ctl.sock
ctl() { "$LAYOUTCTL" --socket "$S" "$@"; }

log "status / volumes / workspaces: tables"
out=$(ctl status)
grep -q '^layoutd .* state ready' <<<"$out" || fail "status: $out"
grep -q '^Workspaces:  3 total, 3 running, 0 failed' <<<"$out" || fail "status: $out"
out=$(ctl volumes)
head -n1 <<<"$out" | grep -q '^NAME  *ROLE  *BACKEND  *FS  *DEVICE  *DIRECT-IO  *SIZE  *USED  *FREE  *USE%  *SCOPE  *HEALTH$' || fail "volumes header: $out"
grep -Eq '^state-0 +state +loop-ext4 +ext4 +/dev/loop10 +yes +8\.0G ' <<<"$out" || fail "volumes row: $out"
[ "$(wc -l <<<"$out")" -eq 4 ] || fail "volumes: 3 rows expected: $out"
grep -q $'\033' <<<"$out" && fail "colour codes written to a pipe"
out=$(ctl workspaces)
grep -Eq '^ws-1 +acme +state-1 +1 +running +[0-9]+ +0 +2\.0G +team=red$' <<<"$out" || fail "workspaces row: $out"
# Columns line up: every row's VOLUME column starts where the header's does.
col=$(head -n1 <<<"$out" | grep -bo VOLUME | cut -d: -f1)
tail -n +2 <<<"$out" | while IFS= read -r l; do [ "${l:$col:6}" = state- ] || fail "misaligned: '$l'"; done

log "--json prints the API's JSON (global or per-verb option)"
ctl --json status >"$WORK/j1"
json_check "$WORK/j1" version state workspaces.total
"$LAYOUTCTL" workspaces --json --socket "$S" >"$WORK/j2"
json_check "$WORK/j2" workspaces.2.id
ctl volumes --json >"$WORK/j3"
assert_eq 3 "$("$PY3" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["volumes"]))' "$WORK/j3")" "volumes in JSON"

log "add / restart / rm / reload"
out=$(ctl add new-ws --tenant acme --quota 512MiB --label team=red --label tier=gold)
grep -q '^Created workspace new-ws on state-[01] (flush scope [0-9]*)' <<<"$out" || fail "add: $out"
assert_eq 200 "$(req "$S" GET /v1/workspaces/new-ws)" "added workspace visible"
assert_eq 536870912 "$(json_get "$WORK/body" quota_bytes)" "quota"
assert_eq gold "$(json_get "$WORK/body" labels.tier)" "labels"
ctl add --json json-ws >"$WORK/j4"
assert_eq json-ws "$(json_get "$WORK/j4" id)" "add --json"
rc=0; ctl add new-ws 2>"$WORK/err" || rc=$?
assert_eq 1 "$rc" "duplicate add exit code"
grep -q "exists already (HTTP 409, exists)" "$WORK/err" || fail "duplicate add message: $(cat "$WORK/err")"
# restart waits for the operation: its steps on stderr, the outcome on stdout.
out=$(ctl restart new-ws 2>"$WORK/steps")
grep -Eq '^Restarted the daemon of workspace new-ws \(pid [0-9]+\)$' <<<"$out" || fail "restart: $out"
grep -q 'restarting the FUSE daemon: done, pid' "$WORK/steps" || fail "restart steps: $(cat "$WORK/steps")"
assert_eq 200 "$(req "$S" GET /v1/workspaces/new-ws)" "after restart"
assert_eq 1 "$(json_get "$WORK/body" daemon.restarts)" "restart reached the engine"
assert_eq "Removed workspace new-ws (data kept)" "$(ctl rm new-ws)" "rm"
assert_eq "Removed workspace json-ws (data destroyed)" "$(ctl rm json-ws --destroy-data)" "rm --destroy-data"
assert_eq 404 "$(req "$S" GET /v1/workspaces/new-ws)" "removed"
rc=0; ctl rm new-ws 2>"$WORK/err" || rc=$?
assert_eq 1 "$rc" "rm of a missing workspace"
grep -q "No workspace 'new-ws' (HTTP 404, not_found)" "$WORK/err" || fail "rm message: $(cat "$WORK/err")"
ctl reload | grep -q '^Reloaded the layout: unchanged' || fail "reload"
# --no-wait: the operation is printed, the command returns at once.
out=$(ctl restart ws-1 --no-wait)
grep -q '^Accepted: operation op-[0-9a-f]*' <<<"$out" || fail "restart --no-wait: $out"
ctl restart ws-1 --no-wait --json >"$WORK/j5"
json_check "$WORK/j5" id restarting operation.id operation.state

log "lists: -o, --no-legend, --bytes; show"
out=$(ctl workspaces -o id,daemon,volume --no-legend)
grep -Eq '^ws-1 +running +state-1$' <<<"$out" || fail "workspaces -o: $out"
head -n1 <<<"$(ctl volumes -o NAME,SIZE)" | grep -Eq '^NAME +SIZE$' || fail "volumes -o header"
grep -Eq '^state-0 +8589934592$' <<<"$(ctl volumes -o name,size --bytes --no-legend)" || fail "volumes --bytes"
rc=0; ctl volumes -o name,bogus 2>"$WORK/err" >/dev/null || rc=$?
assert_eq 2 "$rc" "unknown column"
grep -q "unknown column 'bogus'" "$WORK/err" || fail "unknown column message: $(cat "$WORK/err")"
ctl show ws-1 | grep -Eq '^daemon\.state +running$' || fail "show workspace"
ctl show state-0 | grep -Eq '^backend +loop-ext4$' || fail "show volume"
rc=0; ctl show nothing-here 2>/dev/null || rc=$?
assert_eq 1 "$rc" "show of an unknown name"

log "--json errors: the API's error object on stdout"
rc=0; ctl --json rm no-such-ws >"$WORK/j6" 2>/dev/null || rc=$?
assert_eq 1 "$rc" "rm --json of a missing workspace"
assert_eq not_found "$(json_get "$WORK/j6" error.code)" "error object on stdout"

log "events: the stream, with --since and --count"
ctl events --since 0 --count 2 --json >"$WORK/events" &
ev=$!
track_pid "$ev"
wait_for 10 sh -c "[ \$(wc -l <'$WORK/events') -ge 2 ]" || fail "no events: $(cat "$WORK/events")"
wait "$ev" || fail "events --count 2 did not end cleanly"
head -n1 "$WORK/events" | "$PY3" -c 'import json,sys; d=json.loads(sys.stdin.readline()); assert d["seq"] >= 1 and d["type"]' ||
    fail "events are not NDJSON: $(cat "$WORK/events")"

log "usage errors: exit 2"
for args in "add" "add BAD_ID" "add x --quota lots" "add x --label novalue" "rm" "restart" "status extra" "volumes --bogus" \
            "events --since x" "events --count 0" "show"; do
    rc=0; ctl $args >/dev/null 2>&1 || rc=$?
    assert_eq 2 "$rc" "layoutctl $args"
done
ctl add --help | grep -q '^Usage: layoutctl add ID' || fail "add --help"

log "layoutd not running: exit 3 with a clear message"
rc=0; "$LAYOUTCTL" --socket "$WORK/none.sock" status 2>"$WORK/err" || rc=$?
assert_eq 3 "$rc" "no socket"
assert_eq "layoutctl status: layoutd is not running (no socket at $WORK/none.sock)" "$(cat "$WORK/err")" "no socket message"
# A socket file with nobody listening (an agent that died): ECONNREFUSED.
"$PY3" -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])" "$WORK/dead.sock"
rc=0; "$LAYOUTCTL" --socket "$WORK/dead.sock" workspaces 2>"$WORK/err" || rc=$?
assert_eq 3 "$rc" "dead socket"
grep -q "layoutd is not running (nothing listens on $WORK/dead.sock)" "$WORK/err" || fail "dead socket message: $(cat "$WORK/err")"

log "all layoutctl client checks passed"
