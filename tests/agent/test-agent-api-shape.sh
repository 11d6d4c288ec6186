#!/usr/bin/env bash
# The API's answers, byte for byte but for what varies between runs
# (api-shape.py masks numbers, UUIDs and the work directory): /v1/status,
# /v1/health, /v1/volumes, /v1/workspaces, /v1/capacity, /metrics and one
# answer of each error kind, from an agent with two workspaces (one with
# a tenant and labels), compared with tests/fixtures/api-shape.txt.
#
# A refactor that must not change the API (issue 39) passes it unchanged.
# A change of the API changes the fixture in the same commit, on purpose:
#   LAYOUTD_API_SHAPE_UPDATE=1 ctest --test-dir build -R agent-api-shape
# Two builds compared directly (before and after a change):
#   LAYOUTD_API_SHAPE_OTHER=/path/to/old/build ctest ... -R agent-api-shape
TEST_NAME=agent-api-shape
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/agent/lib-agent.sh"
require_root; require_loop; require_fuse; require_cmd curl; require_cmd mkfs.ext4
[ -x "$PY" ] || skip "needs /usr/bin/python3"
[ -x "$WSFS" ] || fail "reference daemon not built: $WSFS"
fixture=$LAYOUTD_SOURCE_DIR/tests/fixtures/api-shape.txt

# The root on a host filesystem of its own (ext4, 2 GiB, sparse): the
# answers name its free space (host-low, carvable_limit) and whether it
# takes O_DIRECT, which /tmp on another machine (tmpfs, overlay) or with
# other tests beside this one would change.
truncate -s 2G "$WORK/host.img"
mkfs.ext4 -q -m 0 "$WORK/host.img"
mkdir -p "$WORK/host"
mount -o loop "$WORK/host.img" "$WORK/host"

# shape BUILD OUT: the masked answers of BUILD's agent, on a fresh root.
shape() {
    local build=$1 out=$2
    LAYOUTD=$build/agent/layoutd
    WSFS=$build/examples/wsfs/layoutd-wsfs
    rm -rf "$WORK/host/root" "$WORK/mnt"
    # The work directory is masked; the layout's paths sit below it.
    write_layout "$WORK/layout.yaml" 1 2 2
    sed -i "s|^root: .*|root: $WORK/host/root|" "$WORK/layout.yaml"
    start_agent "$WORK/layout.yaml"
    api POST '/v1/workspaces?wait=30' '{"id":"shape-1"}' >/dev/null
    assert_eq 201 "$(st)" "create shape-1"
    api POST '/v1/workspaces?wait=30' '{"id":"shape-2","tenant":"acme","labels":{"team":"search","tier":"1"}}' >/dev/null
    assert_eq 201 "$(st)" "create shape-2"
    # What moves by itself settles first: both daemons running, a flush
    # probe of each volume done, the capacity watch's first figures.
    settled() {
        local s; s=$(api GET /v1/workspaces) &&
            [ "$(jget "$s" "sum(1 for w in d['workspaces'] if w['daemon']['state'] == 'running')")" = 2 ] &&
            s=$(api GET /v1/volumes) &&
            [ "$(jget "$s" "all((v.get('flush_probe') or {}).get('recent_seconds') is not None for v in d['volumes'] if v['role'] == 'state')")" = True ] &&
            # each daemon's missing-object count, which a probe after its
            # first stats file fills in
            [ "$(api GET /metrics | grep -c '^layoutd_workspace_objects_missing{')" = 2 ]
    }
    wait_for 60 settled || fail "the agent did not settle: $(api GET /v1/volumes)"
    "$PY" "$LAYOUTD_TESTS/agent/api-shape.py" "$SOCK" "$WORK" >"$out" || fail "api-shape.py failed"
    api DELETE /v1/workspaces/shape-1 >/dev/null
    api DELETE /v1/workspaces/shape-2 >/dev/null
    stop_agent
    "$LAYOUTCTL" teardown --layout "$WORK/layout.yaml" --destroy-data --remove-workspaces >/dev/null ||
        fail "teardown of $build's volumes"
}

shape "$LAYOUTD_BUILD_DIR" "$WORK/now.txt"
lines=$(wc -l <"$WORK/now.txt")
[ "$lines" -gt 200 ] || fail "only $lines lines of answers: $(head -20 "$WORK/now.txt")"
if [ -n "${LAYOUTD_API_SHAPE_OTHER:-}" ]; then
    shape "$LAYOUTD_API_SHAPE_OTHER" "$WORK/other.txt"
    diff -u "$WORK/other.txt" "$WORK/now.txt" >"$WORK/diff" ||
        fail "the answers of $LAYOUTD_API_SHAPE_OTHER and $LAYOUTD_BUILD_DIR differ:"$'\n'"$(head -80 "$WORK/diff")"
    log "the answers of both builds are the same ($lines lines)"
elif [ "${LAYOUTD_API_SHAPE_UPDATE:-0}" = 1 ]; then
    cp "$WORK/now.txt" "$fixture"
    log "wrote $fixture ($lines lines)"
else
    [ -f "$fixture" ] || fail "no $fixture: make it with LAYOUTD_API_SHAPE_UPDATE=1"
    diff -u "$fixture" "$WORK/now.txt" >"$WORK/diff" ||
        fail "the API's answers changed (a change on purpose updates the fixture: LAYOUTD_API_SHAPE_UPDATE=1):"$'\n'"$(head -80 "$WORK/diff")"
    log "the answers are as in tests/fixtures/api-shape.txt ($lines lines)"
fi
umount "$WORK/host" || fail "umount $WORK/host"
log "PASS"
