# Shared by the supervisor's integration tests and benchmarks: a config for
# supervise-harness (which plays the agent), starting/stopping it, and
# reading its status file. Teardown kills the harness and every process
# whose command line names $WORK (the daemons), by pid, before common.sh
# unmounts what is left below $WORK.
. "$LAYOUTD_TESTS/lib/common.sh"
require_root
require_fuse
require_cmd jq

HARNESS=$LAYOUTD_BUILD_DIR/tests/supervise/supervise-harness
TESTFS=$LAYOUTD_BUILD_DIR/tests/supervise/testfs
[ -x "$HARNESS" ] && [ -x "$TESTFS" ] || fail "build supervise-harness and testfs first ($LAYOUTD_BUILD_DIR)"
CFG=$WORK/config.json
STATUS=$WORK/status.json
RECORD=$WORK/record.json
HLOG=$WORK/harness.log
HPID=
mkdir -p "$WORK/mnt" "$WORK/state" "$WORK/run"

# The pids of every process whose argv mentions $WORK (our daemons).
work_pids() {
    local p
    for p in /proc/[0-9]*; do
        [ "${p#/proc/}" = "$$" ] && continue
        tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -qF -- "$WORK/" && echo "${p#/proc/}"
    done
    return 0
}

_kill_all() {
    [ -n "$HPID" ] && kill -KILL "$HPID" 2>/dev/null
    local p
    for p in $(work_pids); do kill -KILL "$p" 2>/dev/null; done
    # Give the kernel a moment to tear down the killed daemons' connections.
    for _ in 1 2 3 4 5 6 7 8 9 10; do [ -z "$(work_pids)" ] && break; sleep 0.1; done
    [ -s "$HLOG" ] && [ "${LAYOUTD_VERBOSE:-0}" = 1 ] && tail -n 50 "$HLOG" >&2
    return 0
}
on_cleanup _kill_all

# gen_config N [DEFAULTS_JSON] [INDEX=JSON ...]: N workspaces ws1..wsN,
# defaults merged with DEFAULTS_JSON, workspace INDEX merged with JSON.
gen_config() {
    local n=$1 extra=${2:-'{}'} i ws='[]'
    shift 2 || shift $#
    for i in $(seq 1 "$n"); do
        mkdir -p "$WORK/state/ws$i"
        ws=$(jq -c --arg id "ws$i" --arg sd "$WORK/state/ws$i" --arg mp "$WORK/mnt/ws$i" \
            '. + [{id: $id, state_dir: $sd, mountpoint: $mp}]' <<<"$ws")
    done
    local ov
    for ov in "$@"; do
        ws=$(jq -c --argjson j "${ov#*=}" ".[$((${ov%%=*} - 1))] += \$j" <<<"$ws")
    done
    jq -n --arg rec "$RECORD" --arg st "$STATUS" --arg run "$WORK/run" --arg root "$WORK/mnt" \
        --arg testfs "$TESTFS" --argjson ws "$ws" --argjson extra "$extra" '{
        record: $rec, status: $st, runtime_dir: $run, mount_root: $root,
        defaults: ({command: [$testfs, "--state", "{state_dir}", "{mountpoint}"],
                   restart: "on-failure", backoff_initial_ms: 100, backoff_max_ms: 2000,
                   backoff_reset_after_ms: 60000, crashloop_deaths: 5,
                   crashloop_interval_ms: 60000, ready_timeout_ms: 5000,
                   stop_timeout_ms: 2000} + $extra),
        workspaces: $ws}' >"$CFG"
}

start_harness() {
    rm -f "$STATUS"
    "$HARNESS" "$CFG" 2>>"$HLOG" &
    HPID=$!
    wait_for 10 test -s "$STATUS" || fail "harness did not write its status"
}

# st ID FIELD: a field of a workspace's status.
st() { jq -r --arg id "$1" ".workspaces[\$id].$2" "$STATUS" 2>/dev/null; }
state_is() { [ "$(st "$1" state)" = "$2" ]; }
all_running() {
    local n
    n=$(jq '[.workspaces[] | select(.state != "running")] | length' "$STATUS" 2>/dev/null) || return 1
    [ "$n" = 0 ]
}
# wait_state ID STATE [SECONDS]
wait_state() {
    wait_for "${3:-15}" state_is "$1" "$2" || fail "$1: not $2 (state $(st "$1" state)); log: $(tail -n 20 "$HLOG")"
}
# FUSE mounts at a mount point (mountinfo, never stat).
fuse_mounts_at() { awk -v t="$1" '$5 == t { for (i = 7; $i != "-"; i++); if ($(i+1) ~ /^fuse/) n++ } END { print n + 0 }' /proc/self/mountinfo; }
fuse_mounts_below() { awk -v t="$1/" 'index($5, t) == 1 { for (i = 7; $i != "-"; i++); if ($(i+1) ~ /^fuse/) n++ } END { print n + 0 }' /proc/self/mountinfo; }
alive() { kill -0 "$1" 2>/dev/null && [ "$(awk '{print $3}' /proc/"$1"/stat 2>/dev/null)" != Z ]; }
