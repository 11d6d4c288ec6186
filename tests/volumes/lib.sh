# Shared by the volume integration tests (sourced after tests/lib/common.sh).
LAYOUTCTL=${LAYOUTCTL:-$LAYOUTD_BUILD_DIR/agent/layoutctl}
[ -x "$LAYOUTCTL" ] || skip "layoutctl not built at $LAYOUTCTL"
require_root
require_loop
require_cmd losetup
require_cmd mkfs.ext4
require_cmd blkid

ROOT=$WORK/root
LAYOUT=$WORK/layout.yaml

# write_layout STATE_BACKEND STATE_SIZE CONTENT_BACKEND CONTENT_SIZE [SHARDS]
write_layout() {
    cat >"$LAYOUT" <<EOL
version: 1
root: $ROOT
pools:
  state:
    backend: $1
    volume_size: $2
    min_volumes: 1
    max_volumes: 4
    workspaces_per_volume: 3
  content:
    backend: $3
    volume_size: $4
    shards: ${5:-1}
workspace:
  command: [/bin/true]
EOL
}

lctl() { "$LAYOUTCTL" "$@" --layout "$LAYOUT" --root "$ROOT"; }

img() { echo "$ROOT/images/$1.img"; }
mnt() { echo "$ROOT/volumes/$1"; }
loop_of() { losetup -n -O NAME -j "$(img "$1")" | head -n1 | tr -d ' '; }
uuid_of() { blkid -p -s UUID -o value "$(img "$1")"; }

# assert_up VOLUME FSTYPE: mounted at its path from its loop, DIO on, right fs.
assert_up() {
    local v=$1 fs=$2 l
    l=$(loop_of "$v")
    [ -n "$l" ] || fail "$v: no loop device attached to $(img "$v")"
    assert_eq 1 "$(cat /sys/block/"${l#/dev/}"/loop/dio)" "$v: $l direct I/O"
    assert_eq "$l" "$(findmnt -n -o SOURCE --mountpoint "$(mnt "$v")")" "$v: mounted from its loop"
    assert_eq "$fs" "$(findmnt -n -o FSTYPE --mountpoint "$(mnt "$v")")" "$v: fs type"
}

assert_down() {
    local v=$1
    [ -z "$(loop_of "$v")" ] || fail "$v: still attached"
    ! findmnt --mountpoint "$(mnt "$v")" >/dev/null || fail "$v: still mounted"
}
