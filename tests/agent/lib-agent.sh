# Helpers for tests that run the real agent (source after common.sh).
# start_agent LAYOUT [ARGS...]: starts layoutd in the foreground the way the
# unit does (NOTIFY_SOCKET set), waits for READY=1, sets AGENT_PID.
LAYOUTD=$LAYOUTD_BUILD_DIR/agent/layoutd
LAYOUTCTL=$LAYOUTD_BUILD_DIR/agent/layoutctl
WSFS=$LAYOUTD_BUILD_DIR/examples/wsfs/layoutd-wsfs
SOCK=$WORK/api.sock
NOTIFY_LOG=$WORK/notify.log
AGENT_LOG=$WORK/agent.log
PY=/usr/bin/python3

# FUSE daemons run in their own sessions and outlive a killed agent: a
# failing test must not leave them behind (the teardown then unmounts).
on_cleanup 'pkill -KILL -f -- "--state $WORK/" 2>/dev/null || true'

start_notify_listener() {
    [ -n "${NOTIFY_PID:-}" ] && return 0
    "$PY" "$LAYOUTD_TESTS/agent/notify-listen.py" "$WORK/notify.sock" "$NOTIFY_LOG" &
    NOTIFY_PID=$!
    track_pid "$NOTIFY_PID"
    wait_for 10 test -S "$WORK/notify.sock" || fail "notify listener did not start"
}

start_agent() {
    local layout=$1; shift
    start_notify_listener
    local before=0
    if [ -f "$NOTIFY_LOG" ]; then before=$(grep -c 'READY=1' "$NOTIFY_LOG") || true; fi
    NOTIFY_SOCKET=$WORK/notify.sock "$LAYOUTD" --layout "$layout" --socket "$SOCK" "$@" >>"$AGENT_LOG" 2>&1 &
    AGENT_PID=$!
    track_pid "$AGENT_PID"
    wait_for 120 ready_count_above "$before" || { tail -50 "$AGENT_LOG"; fail "agent did not send READY=1"; }
}
ready_count_above() { local n; n=$(grep -c 'READY=1' "$NOTIFY_LOG" 2>/dev/null) || true; [ "${n:-0}" -gt "$1" ]; }

# api METHOD PATH [BODY]: prints the body; `st` prints the HTTP status of
# the last call (kept in a file, since api usually runs in $(...)).
api() {
    local out
    out=$(curl -s -S --max-time 30 --unix-socket "$SOCK" -X "$1" -w '\n%{http_code}' \
        ${3:+-H 'Content-Type: application/json' --data "$3"} "http://layoutd$2")
    printf '%s' "${out##*$'\n'}" >"$WORK/http_status"
    printf '%s' "${out%$'\n'*}"
}
st() { cat "$WORK/http_status"; }

# jq-like field extraction with Debian's python: jget JSON EXPR
jget() { "$PY" -c 'import json,sys; d=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"; }

# stop_agent: SIGINT (Ctrl-C: every workspace stops with the agent).
stop_agent() {
    [ -n "${AGENT_PID:-}" ] || return 0
    kill -INT "$AGENT_PID" 2>/dev/null || true
    local i
    for i in $(seq 1 600); do kill -0 "$AGENT_PID" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$AGENT_PID" 2>/dev/null && fail "agent did not exit after SIGINT"
    wait "$AGENT_PID" 2>/dev/null || true
    AGENT_PID=
}

# write_layout FILE [STATE_MIN] [STATE_MAX] [BOUND]: a small loop-ext4 layout below $WORK.
write_layout() {
    cat >"$1" <<YAML
version: 1
root: $WORK/root
pools:
  state:
    backend: loop-ext4
    volume_size: 64MiB
    min_volumes: ${2:-1}
    max_volumes: ${3:-8}
    workspaces_per_volume: ${4:-3}
    workspace_reserve: 4MiB
  content:
    backend: loop-ext4
    volume_size: 128MiB
    shards: 1
workspace:
  mount_root: $WORK/mnt
  command: [$WSFS, --state, "{state_dir}", --content, "{content_dirs}", "{mountpoint}"]
  package_store: true
  restart: on-failure
  backoff: {initial: 200ms, max: 2s, reset_after: 10s}
  ready_timeout: 10s
  stop_timeout: 5s
api:
  socket: $SOCK
  group: layoutd-no-such-group
  flush_probe_interval: 1s
YAML
}

# hostile_imports PREFIX: every archive of tests/chaos/hostile-archives.py
# imported into the agent at $SOCK as PREFIX-N (issue 35.2): each must be
# refused saying why, leave no workspace, write nothing beside the victim
# and read nothing of it (its atime, set to the epoch first, stays: the
# filesystems here are relatime) nor show its digest.
hostile_imports() {
    local prefix=$1 dir=$WORK/hostile-$1 n=0 file expect out code
    rm -rf "$dir" && mkdir -p "$dir/corpus" "$dir/outside" || fail "hostile imports: cannot make $dir"
    echo "a host file that no import may read" >"$dir/outside/victim"
    local digest
    digest=$(sha256sum "$dir/outside/victim" | cut -d' ' -f1)
    "$PY" "$LAYOUTD_TESTS/chaos/hostile-archives.py" "$dir/corpus" "$dir/outside/victim" >"$dir/list" ||
        fail "hostile imports: cannot write the corpus"
    touch -a -d @0 "$dir/outside/victim"
    while IFS=$'\t' read -r file expect; do
        n=$((n + 1))
        out=$dir/import-$n.txt
        "$LAYOUTCTL" --socket "$SOCK" import "$file" --id "$prefix-$n" >"$out" 2>&1 &&
            fail "hostile imports: $(basename "$file") was imported: $(cat "$out")"
        has "$expect" <"$out" || fail "hostile imports: $(basename "$file") refused, but not saying '$expect': $(cat "$out")"
        has "$digest" <"$out" && fail "hostile imports: $(basename "$file"): the refusal shows the victim's digest"
        code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 30 --unix-socket "$SOCK" "http://layoutd/v1/workspaces/$prefix-$n")
        [ "$code" = 404 ] || fail "hostile imports: $(basename "$file") left workspace $prefix-$n ($code)"
    done <"$dir/list"
    [ "$n" -ge 10 ] || fail "hostile imports: only $n archives in the corpus"
    [ "$(stat -c %X "$dir/outside/victim")" = 0 ] || fail "hostile imports: the victim was read"
    [ "$(ls -A "$dir/outside")" = victim ] || fail "hostile imports: written beside the victim: $(ls -A "$dir/outside")"
    [ -z "$(find "$WORK" / -maxdepth 1 -name escape 2>/dev/null; find "$WORK" -xdev -name escape 2>/dev/null)" ] ||
        fail "hostile imports: an escape file was written"
    rm -rf "$dir"
    log "hostile imports: $n archives refused, nothing read or written outside"
}
