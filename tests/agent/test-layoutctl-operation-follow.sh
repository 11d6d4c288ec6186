#!/usr/bin/env bash
# layoutctl follows an operation past its first poll: a content sweep that
# takes 7 s (the poll asks for 5 s at most), on the dir backend (no
# device). The ASan chaos soak found the follow reading the operation's id
# from an answer it had freed (agent/ctl/layoutctl-http.c,
# client_call_operation); tests/run runs this under ASan (label unit), where
# that is an abort, not luck.
TEST_NAME=layoutctl-operation-follow
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/agent/lib-agent.sh"
require_root; require_cmd curl
[ -x "$PY" ] || skip "needs /usr/bin/python3"

cat >"$WORK/slow-gc" <<'SH'
#!/bin/sh
sleep 7
echo '{"ok": true, "objects_swept": 0, "bytes_freed": 0}'
SH
chmod +x "$WORK/slow-gc"
L=$WORK/layout.yaml
cat >"$L" <<YAML
version: 1
root: $WORK/root
pools:
  state: {backend: dir}
  content:
    backend: dir
    gc: {command: [$WORK/slow-gc], interval: 1h, grace: 1h}
workspace:
  mount_root: $WORK/mnt
  command: [/bin/true, "{state_dir}", "{content_dirs}", "{mountpoint}"]
api:
  socket: $SOCK
  group: layoutd-no-such-group
  flush_probe_interval: 0
YAML
start_agent "$L"
t=$SECONDS
"$LAYOUTCTL" --socket "$SOCK" gc >"$WORK/gc.out" 2>"$WORK/gc.err" || fail "layoutctl gc exited $?: $(cat "$WORK/gc.err")"
[ $((SECONDS - t)) -ge 6 ] || fail "the sweep did not outlast the first poll ($((SECONDS - t)) s): the test proves nothing"
grep -q "0 objects" "$WORK/gc.out" || grep -qi "swept\|reclaimed" "$WORK/gc.out" ||
    fail "layoutctl gc printed no result: $(cat "$WORK/gc.out")"
log "layoutctl gc: $(tr "\n" " " <"$WORK/gc.out")"
grep -qi "sanitizer" "$WORK/gc.err" && fail "a sanitizer report: $(cat "$WORK/gc.err")"
stop_agent
log "PASS"
