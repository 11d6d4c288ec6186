#!/usr/bin/env bash
# A daemon that exits at once: the backoff grows (recorded delays strictly
# increase, each within +-20% of initial*2^(n-1)), then FAILED at the
# crash-loop limit with the last exit status; other workspaces unaffected;
# an explicit restart is the only way out of FAILED.
. "$LAYOUTD_TESTS/supervise/lib.sh"
gen_config 3 '{"crashloop_deaths": 5}' \
    "2={\"command\": [\"$TESTFS\", \"--exit-now\", \"--state\", \"{state_dir}\", \"{mountpoint}\"]}"
start_harness
wait_state ws2 failed 30
p1=$(st ws1 pid) p3=$(st ws3 pid)
assert_eq 3 "$(st ws2 exit_status)" "ws2 last exit status"
delays=$(st ws2 delays_ms)
assert_eq 4 "$(jq length <<<"$delays")" "delays before giving up (5 deaths)"
jq -e '. as $d | [range(1; length) | $d[.] > $d[. - 1]] | all' <<<"$delays" >/dev/null ||
    fail "delays do not grow: $delays"
for k in 0 1 2 3; do
    d=$(jq ".[$k]" <<<"$delays") nominal=$((100 << k))
    [ "$d" -ge $((nominal * 8 / 10)) ] && [ "$d" -le $((nominal * 12 / 10 + 1)) ] ||
        fail "delay $k = $d ms, nominal $nominal"
done
assert_eq 4 "$(st ws2 restarts)" "ws2 restarts"
grep -q "\[ws2\] ! failed: last daemon exit status 3" "$HLOG" || fail "FAILED not logged with status"
# FAILED stays: no timer brings it back.
sleep 1
state_is ws2 failed || fail "ws2 left FAILED by itself"
for i in 1 3; do state_is ws$i running || fail "ws$i not running"; assert_eq 0 "$(st ws$i restarts)" "ws$i restarts"; done
assert_eq "$p1 $p3" "$(st ws1 pid) $(st ws3 pid)" "others' pids"
log "ok"
