#!/usr/bin/env bash
# workspace.writeback: the agent sets the dirty limit of each daemon's FUSE
# mount (its bdi, /sys/class/bdi/<st_dev of the mount>/) once the daemon
# runs, and the values read back from the kernel are in the workspace's
# API object: for a new daemon, for one restarted (a new mount, a new
# bdi), for one re-adopted by a new agent (its limits changed by hand
# while no agent ran are set again), after a reload that changes the key
# (max_bytes instead of max_ratio; strict_limit back to the kernel's), and
# after a reload that drops it (the FUSE defaults: max_ratio 1,
# strict_limit on).
TEST_NAME=agent-writeback
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/agent/lib-agent.sh"
require_root; require_loop; require_fuse; require_cmd curl; require_cmd findmnt
[ -x "$PY" ] || skip "needs /usr/bin/python3"
[ -x "$WSFS" ] || fail "reference daemon not built: $WSFS"

L=$WORK/layout.yaml
# with_writeback YAML-FLOW: the test layout with workspace.writeback set
# (empty: without the key).
with_writeback() {
    write_layout "$L" 1 2 2
    if [ -n "$1" ]; then sed -i "s|^  stop_timeout: 5s\$|  stop_timeout: 5s\n  writeback: $1|" "$L"; fi
}
with_writeback "{max_ratio: 7, strict_limit: false}"
start_agent "$L"
api POST /v1/workspaces '{"id":"w1"}' >/dev/null; assert_eq 201 "$(st)" "create w1"

bdi_of() { findmnt -n -o MAJ:MIN --mountpoint "$WORK/mnt/$1" | tr -d ' '; }
knob() { cat "/sys/class/bdi/$(bdi_of "$1")/$2"; }
[ -e "/sys/class/bdi/$(bdi_of w1)/strict_limit" ] || skip "this kernel has no bdi strict_limit/max_bytes knobs (Linux 6.2+)"
ratio_is() { [ "$(knob "$1" max_ratio)" = "$2" ]; }
# near A B: within the kernel's rounding of max_bytes (kept as a ratio of
# the dirty limit, which moves with free memory): 1 % + 1 MiB.
near() { [ $(($1 > $2 ? $1 - $2 : $2 - $1)) -le $(($2 / 100 + 1048576)) ]; }
wb() { jget "$(api GET "/v1/workspaces/$1")" "d['writeback'] and d['writeback'].get('$2')"; }
# check WS RATIO STRICT(0/1) WHAT: the kernel's values and the API's.
check() {
    wait_for 10 ratio_is "$1" "$2" || fail "$4: $1's bdi max_ratio is $(knob "$1" max_ratio), not $2"
    assert_eq "$3" "$(knob "$1" strict_limit)" "$4: $1's bdi strict_limit"
    assert_eq "$2" "$(wb "$1" max_ratio)" "$4: the API's writeback.max_ratio"
    assert_eq "$([ "$3" = 1 ] && echo True || echo False)" "$(wb "$1" strict_limit)" "$4: the API's strict_limit"
    assert_eq "$(bdi_of "$1")" "$(wb "$1" bdi)" "$4: the API names the mount's bdi"
    near "$(wb "$1" max_bytes)" "$(knob "$1" max_bytes)" || fail "$4: the API's max_bytes $(wb "$1" max_bytes), the kernel's $(knob "$1" max_bytes)"
    assert_eq None "$(wb "$1" error)" "$4: no error"
}
check w1 7 0 "a new daemon"
dd if=/dev/zero of="$WORK/mnt/w1/big" bs=1M count=8 conv=fsync status=none || fail "cannot write through w1"

# A restart: a new mount with a new bdi that starts at the kernel's 1 %.
pid=$(jget "$(api GET /v1/workspaces/w1)" "d['daemon']['pid']")
api POST /v1/workspaces/w1/restart >/dev/null
restarted() { [ "$(jget "$(api GET /v1/workspaces/w1)" "d['daemon']['state'] == 'running' and d['daemon']['pid'] != $pid")" = True ]; }
wait_for 30 restarted || fail "w1 did not come back with a new pid"
check w1 7 0 "a restarted daemon"

# A new agent re-adopts the daemon and sets its limits again.
kill -KILL "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null || true
echo 1 >"/sys/class/bdi/$(bdi_of w1)/max_ratio"
echo 1 >"/sys/class/bdi/$(bdi_of w1)/strict_limit"
start_agent "$L"
assert_eq True "$(jget "$(api GET /v1/workspaces/w1)" "d['daemon']['adopted']")" "w1 re-adopted"
check w1 7 0 "a re-adopted daemon"

# A reload: max_bytes instead of max_ratio; strict_limit left to the kernel.
with_writeback "{max_bytes: 256MiB}"
r=$(api POST '/v1/reload?wait=30'); assert_eq 200 "$(st)" "reload with max_bytes ($r)"
bytes_near() { near "$(knob w1 max_bytes)" 268435456; }
wait_for 10 bytes_near || fail "max_bytes after the reload: $(knob w1 max_bytes), not about 256 MiB"
assert_eq 1 "$(knob w1 strict_limit)" "strict_limit back to the FUSE default after the reload"
near "$(wb w1 max_bytes)" 268435456 || fail "the API's max_bytes after the reload: $(wb w1 max_bytes)"
assert_eq "$(knob w1 max_ratio)" "$(wb w1 max_ratio)" "the API's max_ratio after the reload"

# A reload without the key: the mount goes back to the FUSE defaults.
with_writeback ""
r=$(api POST '/v1/reload?wait=30'); assert_eq 200 "$(st)" "reload without writeback ($r)"
check w1 1 1 "the key dropped"

# A value the kernel refuses: the daemon serves on, the API says why
# (as much as the memory: above the dirty limit, a share of it)
with_writeback "{max_bytes: $(awk '/^MemTotal:/ { print int($2 / 1024) }' /proc/meminfo)MiB}"
r=$(api POST '/v1/reload?wait=30'); assert_eq 200 "$(st)" "reload with a huge max_bytes ($r)"
has_error() { [ "$(wb w1 error)" != None ]; }
wait_for 10 has_error || fail "no error in the API for a refused max_bytes"
wb w1 error | has "max_bytes" || fail "the error does not name max_bytes: $(wb w1 error)"
echo ok >"$WORK/mnt/w1/after" && assert_eq ok "$(cat "$WORK/mnt/w1/after")" "w1 serves after a refused limit"
has "workspace w1: .*max_bytes" <"$AGENT_LOG" || fail "the agent did not log the refused limit"
stop_agent
log "PASS"
