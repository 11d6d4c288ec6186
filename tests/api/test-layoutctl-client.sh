#!/usr/bin/env bash
# layoutctl's client verbs against api-testserver: tables as lsblk prints
# them (libsmartcols: -o, +COL, -n, -r, -P, -J, -b), --json (the API's JSON
# as is), strings from the API escaped on their way to the terminal,
# add/rm/restart/reload changing the fake engine, the exit codes (1 API
# error, 2 usage, 3 not running, 4 no such object, 5 not healthy), one-line
# usage errors with "did you mean", refused flag conflicts, waiting for a
# starting agent (--wait), and what to do when it is not running or the
# socket's group is missing.
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/api/lib-api.sh"
require_root   # setpriv --reuid for the 403 case
require_cmd setpriv
LAYOUTCTL=$LAYOUTD_BUILD_DIR/agent/layoutctl
[ -x "$LAYOUTCTL" ] || fail "$LAYOUTCTL not built"
GRP=60777      # numeric group: no group entry needed
chmod 0755 "$WORK"   # the unprivileged clients below must reach the sockets

# The first workspace carries a hostile label: ESC, a C1 CSI, a bidi
# override, a newline. None of it may reach the terminal raw.
HOSTILE=$'red\e[31mX\xc2\x9b2J\xe2\x80\xaeevil\nline'
start_server ctl --mode 0666 --group "$GRP" --quiet --label "$HOSTILE"
S=$WORK/ctl.sock
ctl() { "$LAYOUTCTL" --socket "$S" "$@"; }
# no_raw FILE WHAT: the file holds none of the hostile bytes.
no_raw() {
    if LC_ALL=C grep -qP '\x1b|\xc2\x9b|\xe2\x80\xae' "$1"; then fail "$2: raw control or bidi bytes reached the output: $(cat -v "$1")"; fi
}

log "status / volumes / workspaces: tables"
out=$(ctl status) || fail "status of a healthy agent exits $?"
grep -q '^layoutd .* state ready, health ok' <<<"$out" || fail "status: $out"
grep -q '^Workspaces:  3 total, 3 running, 0 failed' <<<"$out" || fail "status: $out"
out=$(ctl volumes)
head -n1 <<<"$out" | grep -Eq '^NAME +ROLE +BACKEND +FS +DEVICE +DIRECT-IO +SIZE +USED +FREE +USE% +SCOPE +FLUSH +HEALTH$' ||
    fail "volumes header: $out"
grep -Eq '^state-0 +state +loop-ext4 +ext4 +/dev/loop10 +yes +8\.0G ' <<<"$out" || fail "volumes row: $out"
[ "$(wc -l <<<"$out")" -eq 4 ] || fail "volumes: 3 rows expected: $out"
grep -q $'\033' <<<"$out" && fail "colour codes written to a pipe"
# Default workspace columns: MOUNTPOINT shown, QUOTA hidden (no quotas yet).
out=$(ctl workspaces)
head -n1 <<<"$out" | grep -Eq '^ID +TENANT +VOLUME +SCOPE +DAEMON +PID +RESTARTS +MOUNTPOINT +LABELS$' ||
    fail "workspaces header: $out"
grep -Eq '^ws-1 +acme +state-1 +1 +running +[0-9]+ +0 +/var/lib/layoutd/workspaces/ws-1 +team=red$' <<<"$out" ||
    fail "workspaces row: $out"
# Columns line up: every row's VOLUME column starts where the header's does.
col=$(head -n1 <<<"$out" | grep -bo VOLUME | cut -d: -f1)
tail -n +2 <<<"$out" | while IFS= read -r l; do [ "${l:$col:6}" = state- ] || fail "misaligned: '$l'"; done

log "labels and strings from the API are escaped (C0, C1, bidi), in every output"
ctl workspaces >"$WORK/t1"; no_raw "$WORK/t1" "table"
grep -qF 'note=red\x1b[31mX\xc2\x9b2J\xe2\x80\xaeevil\x0aline' "$WORK/t1" || fail "escaped label missing: $(cat -v "$WORK/t1")"
[ "$(wc -l <"$WORK/t1")" -eq 4 ] || fail "a newline in a label broke the table: $(cat -v "$WORK/t1")"
ctl workspaces -o id,labels -P >"$WORK/t2"; no_raw "$WORK/t2" "-P"
grep -qF 'LABELS="team=blue,note=red\x1b[31mX\xc2\x9b2J\xe2\x80\xaeevil\x0aline"' "$WORK/t2" || fail "-P label: $(cat -v "$WORK/t2")"
ctl workspaces -o id,labels -r >"$WORK/t3"; no_raw "$WORK/t3" "-r"
[ "$(wc -l <"$WORK/t3")" -eq 4 ] || fail "a newline in a label broke -r: $(cat -v "$WORK/t3")"
ctl workspaces -o id,labels -J >"$WORK/t4"; no_raw "$WORK/t4" "-J"
ctl --json workspaces >"$WORK/t5"; no_raw "$WORK/t5" "--json"
ctl show ws-0 >"$WORK/t6"; no_raw "$WORK/t6" "show"
# The JSON still means the same: the label comes back whole.
got=$("$PY3" -c 'import json,sys; print(json.load(open(sys.argv[1]))["workspaces"][0]["labels"]["note"], end="")' "$WORK/t5")
[ "$got" = "$HOSTILE" ] || fail "--json changed the label: $(printf %q "$got")"
got=$("$PY3" -c 'import json,sys; print(json.load(open(sys.argv[1]))["workspaces"][0]["labels"], end="")' "$WORK/t4")
[ "$got" = "team=blue,note=$HOSTILE" ] || fail "-J changed the label: $(printf %q "$got")"

log "--json prints the API's JSON (global or per-verb option)"
ctl --json status >"$WORK/j1"
json_check "$WORK/j1" version state workspaces.total
"$LAYOUTCTL" workspaces --json --socket "$S" >"$WORK/j2"
json_check "$WORK/j2" workspaces.2.id
ctl volumes --json >"$WORK/j3"
assert_eq 3 "$("$PY3" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["volumes"]))' "$WORK/j3")" "volumes in JSON"
json_check "$WORK/j3" volumes.0.mountpoint volumes.0.workspaces

log "lists: -o, +COL, -n, -b, -r, -P, -J (honouring -o), --json with -o"
out=$(ctl workspaces -o id,daemon,volume -n)
grep -Eq '^ws-1 +running +state-1$' <<<"$out" || fail "workspaces -o -n: $out"
[ "$(ctl workspaces -o id --no-legend | head -n1)" = ws-0 ] || fail "--no-legend"
head -n1 <<<"$(ctl volumes -o NAME,SIZE)" | grep -Eq '^NAME +SIZE$' || fail "volumes -o header"
grep -Eq '^state-0 +8589934592$' <<<"$(ctl volumes -o name,size --bytes -n)" || fail "volumes --bytes"
grep -Eq '^state-0 +8589934592$' <<<"$(ctl volumes -o name,size -b -n)" || fail "volumes -b"
head -n1 <<<"$(ctl workspaces -o +QUOTA)" | grep -Eq '^ID +.* +LABELS +QUOTA$' || fail "+QUOTA appends"
grep -Eq '^ws-1 .* 2\.0G$' <<<"$(ctl workspaces -o +quota)" || fail "+quota row"
assert_eq "state-0 8.0G" "$(ctl volumes -o name,size -r -n | head -n1)" "-r"
assert_eq 'NAME="state-0" USE_PCT="" DIRECT_IO="yes"' "$(ctl volumes -o name,use%,direct-io -P | head -n1)" "-P (shell names)"
ctl volumes -o name,size,direct-io -J >"$WORK/j4"
"$PY3" - "$WORK/j4" <<'PY' || fail "-J: $(cat "$WORK/j4")"
import json, sys
d = json.load(open(sys.argv[1]))
v = d["volumes"][0]
assert set(v) == {"name", "size", "direct-io"}, v
assert v["name"] == "state-0" and v["size"] == 8589934592 and v["direct-io"] is True, v
PY
# -J without -o: the default columns in lsblk's JSON shape, not the API's
# answer (issue 39); -r leaves an absent value empty, as lsblk -r does.
ctl volumes -J >"$WORK/j6"
"$PY3" -c 'import json,sys; d=json.load(open(sys.argv[1])); v=d["volumes"][0]; assert "direct-io" in v and "use%" in v and "direct_io" not in v and "backend" in v, v' "$WORK/j6" ||
    fail "-J without -o: $(head -c 400 "$WORK/j6")"
assert_eq "state-0 " "$(ctl volumes -o name,use% -r -n | head -n1)" "-r with an absent value"
ctl --json volumes -o name >"$WORK/j5"
"$PY3" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert list(d["volumes"][0]) == ["name"], d' "$WORK/j5" ||
    fail "--json -o: $(cat "$WORK/j5")"
rc=0; ctl volumes -o name,bogus 2>"$WORK/err" >/dev/null || rc=$?
assert_eq 2 "$rc" "unknown column"
grep -q "unknown column 'BOGUS'" "$WORK/err" || fail "unknown column message: $(cat "$WORK/err")"
rc=0; ctl volumes -o nmae 2>"$WORK/err" >/dev/null || rc=$?
assert_eq 2 "$rc" "misspelt column"
grep -q "did you mean 'NAME'" "$WORK/err" || fail "column suggestion: $(cat "$WORK/err")"
rc=0; ctl volumes -r -P 2>"$WORK/err" >/dev/null || rc=$?
assert_eq 2 "$rc" "-r with -P"

log "show: workspace or volume, --type, exit 4 for an unknown id"
ctl show ws-1 | grep -Eq '^daemon\.state +running$' || fail "show workspace"
ctl show state-0 | grep -Eq '^backend +loop-ext4$' || fail "show volume"
ctl show state-0 --type volume | grep -Eq '^backend +loop-ext4$' || fail "show --type volume"
ctl show ws-1 --type workspace | grep -Eq '^id +ws-1$' || fail "show --type workspace"
# The human view (issue 39): a time as a date with its age, a float
# rounded, arrays listed; --bytes keeps them raw.
ctl show ws-1 >"$WORK/show"
grep -Eq '^created_at +20[0-9]{2}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2} UTC \([0-9]+ s ago\)$' "$WORK/show" ||
    fail "created_at as a date: $(grep created_at "$WORK/show")"
grep -Eq '^daemon\.ready_latency_sec +0\.04416$' "$WORK/show" || fail "a float rounded: $(grep latency "$WORK/show")"
grep -Eq '^notes +first, second$' "$WORK/show" || fail "an array listed: $(grep notes "$WORK/show")"
grep -Eq '^shards +-$' "$WORK/show" || fail "an empty array: $(grep shards "$WORK/show")"
ctl show ws-1 --bytes | grep -Eq '^created_at +[0-9]+$' || fail "--bytes keeps the time raw"
for args in "nothing-here" "ws-1 --type volume" "state-0 --type workspace"; do
    rc=0; ctl show $args 2>"$WORK/err" >/dev/null || rc=$?
    assert_eq 4 "$rc" "show $args"
done
grep -q "no workspace named 'state-0'" "$WORK/err" || fail "show --type workspace message: $(cat "$WORK/err")"
rc=0; ctl show state-0 --type vol 2>"$WORK/err" || rc=$?
assert_eq 2 "$rc" "show --type vol"
grep -q "did you mean 'volume'" "$WORK/err" || fail "--type suggestion: $(cat "$WORK/err")"

log "add / restart / rm / reload"
out=$(ctl add new-ws --tenant acme --quota 512MiB --label team=red --label tier=gold)
grep -q '^Created workspace new-ws on state-[01] (flush scope [0-9]*)' <<<"$out" || fail "add: $out"
assert_eq 200 "$(req "$S" GET /v1/workspaces/new-ws)" "added workspace visible"
assert_eq 536870912 "$(json_get "$WORK/body" quota_bytes)" "quota"
assert_eq gold "$(json_get "$WORK/body" labels.tier)" "labels"
ctl add --json json-ws >"$WORK/j6"
assert_eq json-ws "$(json_get "$WORK/j6" id)" "add --json"
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
assert_eq 4 "$rc" "rm of a missing workspace"
grep -q "No workspace 'new-ws' (HTTP 404, not_found)" "$WORK/err" || fail "rm message: $(cat "$WORK/err")"
ctl reload | grep -q '^Reloaded the layout: unchanged' || fail "reload"
# --no-wait: the operation is printed, the command returns at once.
out=$(ctl restart ws-1 --no-wait)
grep -q '^Accepted: operation op-[0-9a-f]*' <<<"$out" || fail "restart --no-wait: $out"
ctl restart ws-1 --no-wait --json >"$WORK/j7"
json_check "$WORK/j7" id restarting operation.id operation.state

log "--json errors: the API's error object on stdout"
rc=0; ctl --json rm no-such-ws >"$WORK/j8" 2>/dev/null || rc=$?
assert_eq 4 "$rc" "rm --json of a missing workspace"
assert_eq not_found "$(json_get "$WORK/j8" error.code)" "error object on stdout"

log "events: the stream, with --since and --count"
ctl events --since 0 --count 2 --json >"$WORK/events" &
ev=$!
track_pid "$ev"
wait_for 10 sh -c "[ \$(wc -l <'$WORK/events') -ge 2 ]" || fail "no events: $(cat "$WORK/events")"
wait "$ev" || fail "events --count 2 did not end cleanly"
head -n1 "$WORK/events" | "$PY3" -c 'import json,sys; d=json.loads(sys.stdin.readline()); assert d["seq"] >= 1 and d["type"]' ||
    fail "events are not NDJSON: $(cat "$WORK/events")"

log "usage errors: exit 2, one line, 'did you mean' for a typo"
for args in "add" "add BAD_ID" "add x --quota lots" "add x --label novalue" "rm" "restart" "status extra" "volumes --bogus" \
            "events --since x" "events --count 0" "show" "add x --tenant" "status --wait soon" \
            "shutdown --stop-workspaces --keep-workspaces" "stauts"; do
    rc=0; ctl $args >/dev/null 2>"$WORK/err" || rc=$?
    assert_eq 2 "$rc" "layoutctl $args"
    [ "$(wc -l <"$WORK/err")" -eq 1 ] || fail "layoutctl $args: more than one line on stderr: $(cat "$WORK/err")"
done
grep -q "did you mean 'status'" "$WORK/err" || fail "verb suggestion: $(cat "$WORK/err")"
rc=0; ctl volumes --bytse 2>"$WORK/err" >/dev/null || rc=$?
assert_eq 2 "$rc" "misspelt option"
assert_eq "layoutctl volumes: unknown option '--bytse'; did you mean '--bytes'? (see 'layoutctl volumes --help')" \
    "$(cat "$WORK/err")" "option suggestion"
rc=0; "$LAYOUTCTL" --sokcet "$S" status 2>"$WORK/err" >/dev/null || rc=$?
assert_eq 2 "$rc" "misspelt global option"
grep -q "did you mean '--socket'" "$WORK/err" || fail "global option suggestion: $(cat "$WORK/err")"
ctl shutdown --stop-workspaces --keep-workspaces 2>"$WORK/err" && fail "conflicting flags accepted"
grep -q "contradict" "$WORK/err" || fail "conflict message: $(cat "$WORK/err")"
assert_eq 200 "$(req "$S" GET /v1/status)" "a refused shutdown changed nothing"
ctl add --help | grep -q '^Usage: layoutctl add ID' || fail "add --help"

log "a non-member's change: 403, and the message names the socket's group"
rc=0; setpriv --reuid 60001 --regid 60001 --clear-groups -- "$LAYOUTCTL" --socket "$S" add by-nobody 2>"$WORK/err" || rc=$?
assert_eq 1 "$rc" "403 exit code"
grep -q "HTTP 403, forbidden" "$WORK/err" || fail "403: $(cat "$WORK/err")"
grep -q "membership in the socket's group '$GRP'" "$WORK/err" || fail "403 does not name the group: $(cat "$WORK/err")"
# A socket closed to non-members (0660): connecting is refused, and the
# message says which group opens it.
start_server strict --mode 0660 --group "$GRP" --quiet
rc=0; setpriv --reuid 60001 --regid 60001 --clear-groups -- "$LAYOUTCTL" --socket "$WORK/strict.sock" status 2>"$WORK/err" || rc=$?
assert_eq 1 "$rc" "EACCES exit code"
grep -q "permission denied on $WORK/strict.sock: connecting needs root or membership in its group '$GRP'" "$WORK/err" ||
    fail "EACCES message: $(cat "$WORK/err")"

log "health: status exits 5 and is-healthy is quiet"
out=$(ctl is-healthy 2>&1) || fail "is-healthy of a healthy agent exits $?"
assert_eq "" "$out" "is-healthy prints nothing"
start_server sick --mode 0666 --quiet --health degraded
rc=0; "$LAYOUTCTL" --socket "$WORK/sick.sock" status >"$WORK/out" 2>&1 || rc=$?
assert_eq 5 "$rc" "status of a degraded agent"
grep -q 'health degraded' "$WORK/out" || fail "degraded status: $(cat "$WORK/out")"
rc=0; "$LAYOUTCTL" --socket "$WORK/sick.sock" --json status >"$WORK/out" || rc=$?
assert_eq 5 "$rc" "status --json of a degraded agent"
rc=0; out=$("$LAYOUTCTL" --socket "$WORK/sick.sock" is-healthy 2>&1) || rc=$?
assert_eq 5 "$rc" "is-healthy of a degraded agent"
assert_eq "" "$out" "is-healthy prints nothing (degraded)"
rc=0; out=$("$LAYOUTCTL" --socket "$WORK/none.sock" is-healthy 2>&1) || rc=$?
assert_eq 3 "$rc" "is-healthy without an agent"
assert_eq "" "$out" "is-healthy prints nothing (not running)"

log "a starting agent: changes wait for it (up to --wait), reads do not"
start_server slow --mode 0666 --quiet --ready-after 1500
rc=0; "$LAYOUTCTL" --socket "$WORK/slow.sock" status >/dev/null || rc=$?
assert_eq 5 "$rc" "status while starting"
rc=0; "$LAYOUTCTL" --socket "$WORK/slow.sock" add too-soon --wait 0 2>"$WORK/err" || rc=$?
assert_eq 1 "$rc" "add --wait 0 while starting"
grep -q "HTTP 503, not_ready" "$WORK/err" || fail "add --wait 0: $(cat "$WORK/err")"
out=$("$LAYOUTCTL" --socket "$WORK/slow.sock" add patient 2>"$WORK/err") || fail "add while starting: $(cat "$WORK/err")"
grep -q '^Created workspace patient' <<<"$out" || fail "add after the wait: $out"
grep -q "layoutd is starting; waiting up to 60s" "$WORK/err" || fail "no word of the wait: $(cat "$WORK/err")"
"$LAYOUTCTL" --socket "$WORK/slow.sock" is-healthy || fail "is-healthy once ready"

log "--wait on a read waits for the agent to be ready, not only for its socket"
start_server slow2 --mode 0666 --quiet --ready-after 1500
out=$("$LAYOUTCTL" --socket "$WORK/slow2.sock" status --wait 20 2>"$WORK/err") ||
    fail "status --wait on a starting agent exits $?: $out $(cat "$WORK/err")"
grep -q "state ready" <<<"$out" || fail "status --wait returned before ready: $out"
grep -q "layoutd is starting; waiting up to 20s for it to be ready" "$WORK/err" || fail "no word of the wait: $(cat "$WORK/err")"
start_server slow3 --mode 0666 --quiet --ready-after 1500
"$LAYOUTCTL" --socket "$WORK/slow3.sock" is-healthy --wait 20 || fail "is-healthy --wait on a starting agent exits $?"
# Never ready: the time runs out, the command says in what state, exits 5.
start_server stuck --mode 0666 --quiet --state starting
t0=$(date +%s%N)
rc=0; out=$("$LAYOUTCTL" --socket "$WORK/stuck.sock" status --wait 1 2>"$WORK/err") || rc=$?
t1=$(date +%s%N)
assert_eq 5 "$rc" "status --wait on an agent that stays starting"
[ $(( (t1 - t0) / 1000000 )) -ge 1000 ] || fail "status --wait 1 returned after $(( (t1 - t0) / 1000000 )) ms"
grep -q "state starting" <<<"$out" || fail "status after the wait: $out"
grep -q "layoutctl status: layoutd is still starting after 1s" "$WORK/err" || fail "timeout message: $(cat "$WORK/err")"
rc=0; out=$("$LAYOUTCTL" --socket "$WORK/stuck.sock" is-healthy --wait 1 2>&1) || rc=$?
assert_eq 5 "$rc" "is-healthy --wait on an agent that stays starting"
assert_eq "" "$out" "is-healthy prints nothing (timed out)"

log "--wait given: a client also waits for an agent that is not there yet"
( sleep 1.5; exec "$API_SERVER" --socket "$WORK/late.sock" --mode 0666 --quiet >"$WORK/late.out" 2>&1 ) &
late=$!
track_pid "$late"
on_cleanup "pkill -P $late 2>/dev/null; kill $late 2>/dev/null"
out=$("$LAYOUTCTL" --socket "$WORK/late.sock" status --wait 20 2>"$WORK/err") || fail "status --wait: $(cat "$WORK/err")"
grep -q "state ready" <<<"$out" || fail "status --wait: $out"
grep -q "waiting up to 20s for layoutd to answer" "$WORK/err" || fail "no word of the wait: $(cat "$WORK/err")"

log "layoutd not running: exit 3 with what to do"
rc=0; "$LAYOUTCTL" --socket "$WORK/none.sock" status 2>"$WORK/err" || rc=$?
assert_eq 3 "$rc" "no socket"
assert_eq "layoutctl status: layoutd is not running (no socket at $WORK/none.sock)" "$(head -n1 "$WORK/err")" "no socket message"
grep -q "systemctl start layoutd" "$WORK/err" || fail "no start hint: $(cat "$WORK/err")"
grep -q "journalctl -u layoutd" "$WORK/err" || fail "no journal hint: $(cat "$WORK/err")"
# A socket file with nobody listening (an agent that died): ECONNREFUSED.
"$PY3" -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])" "$WORK/dead.sock"
rc=0; "$LAYOUTCTL" --socket "$WORK/dead.sock" workspaces 2>"$WORK/err" || rc=$?
assert_eq 3 "$rc" "dead socket"
grep -q "layoutd is not running (nothing listens on $WORK/dead.sock)" "$WORK/err" || fail "dead socket message: $(cat "$WORK/err")"

log "all layoutctl client checks passed"
