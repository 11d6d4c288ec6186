#!/usr/bin/env bash
# API benchmark: api-testserver with 128 fake workspaces; GET /v1/status
# and GET /metrics from 1, 8 and 64 concurrent keep-alive clients.
# Reports p50/p99 latency and requests per second; asserts only that
# every request got a 200 (never anything about time).
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/api/lib-api.sh"
BENCH=$LAYOUTD_BUILD_DIR/tests/bench/bench-api
[ -x "$BENCH" ] || fail "$BENCH not built"
N=${LAYOUTD_BENCH_API_REQUESTS:-5000}

start_server bench --workspaces 128 --mode 0600 --quiet
S=$WORK/bench.sock
assert_eq 200 "$(req "$S" GET /v1/workspaces)" "workspaces"
assert_eq 128 "$("$PY3" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["workspaces"]))' "$WORK/body")" "fake workspaces"
req "$S" GET /metrics >/dev/null
log "/metrics is $(wc -c <"$WORK/body") bytes, $(grep -vc '^#' "$WORK/body") samples"
for path in /v1/status /metrics; do
    for c in 1 8 64; do
        "$BENCH" "$S" "$path" "$c" "$N" || fail "errors during $path x $c"
    done
done
