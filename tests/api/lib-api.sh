# Helpers for the API tests (source after tests/lib/common.sh).
PY3=/usr/bin/python3
[ -x "$PY3" ] || skip "needs /usr/bin/python3"
require_cmd curl
API_SERVER=$LAYOUTD_BUILD_DIR/tests/api/api-testserver
[ -x "$API_SERVER" ] || fail "$API_SERVER not built (cmake --build ... --target api-testserver)"
API_CLIENTS=$LAYOUTD_TESTS/api/api-clients.py

# start_server NAME [api-testserver options...]: serves on $WORK/NAME.sock;
# waits for it to say READY. Sets SERVER_PID.
start_server() {
    local name=$1; shift
    "$API_SERVER" --socket "$WORK/$name.sock" "$@" >"$WORK/$name.out" 2>"$WORK/$name.log" &
    SERVER_PID=$!
    track_pid "$SERVER_PID"
    # A clean stop (SIGTERM) at teardown; the tracked pid is the backstop.
    on_cleanup "kill $SERVER_PID 2>/dev/null; wait $SERVER_PID 2>/dev/null"
    wait_for 10 grep -qs READY "$WORK/$name.out" || { cat "$WORK/$name.log" >&2; fail "server $name did not start"; }
}

# req SOCKET METHOD PATH [curl args...]: body to $WORK/body, prints the status.
req() {
    local sock=$1 m=$2 p=$3; shift 3
    curl -sS --max-time 30 -o "$WORK/body" -w '%{http_code}' --unix-socket "$sock" -X "$m" "$@" "http://localhost$p"
}

# json_check FILE FIELD.PATH...: the file is JSON and has every field
# (dotted paths, numbers index arrays).
json_check() {
    "$PY3" - "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for spec in sys.argv[2:]:
    cur = d
    for k in spec.split('.'):
        if isinstance(cur, list):
            if int(k) >= len(cur):
                sys.exit("json_check: %s: no element %s" % (spec, k))
            cur = cur[int(k)]
        elif isinstance(cur, dict) and k in cur:
            cur = cur[k]
        else:
            sys.exit("json_check: missing field %s in %s" % (spec, open(sys.argv[1]).read()[:300]))
PY
}

# json_get FILE FIELD.PATH: prints the value (JSON-encoded unless a string).
json_get() {
    "$PY3" - "$@" <<'PY'
import json, sys
cur = json.load(open(sys.argv[1]))
for k in sys.argv[2].split('.'):
    cur = cur[int(k)] if isinstance(cur, list) else cur[k]
print(cur if isinstance(cur, str) else json.dumps(cur))
PY
}

# expect_error SOCKET METHOD PATH STATUS CODE [curl args...]
expect_error() {
    local sock=$1 m=$2 p=$3 st=$4 code=$5; shift 5
    local got
    got=$(req "$sock" "$m" "$p" "$@")
    assert_eq "$st" "$got" "$m $p status"
    assert_eq "$code" "$(json_get "$WORK/body" error.code)" "$m $p error code"
    json_check "$WORK/body" error.message
}
