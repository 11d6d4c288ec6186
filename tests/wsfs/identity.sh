#!/usr/bin/env bash
# The daemon refuses a --content or --state dir that is not the volume it
# was told about (issue 19, defect 3: objects landed on the host's root
# filesystem under an unmounted content volume's mount point). Real
# loop-backed ext4 volumes, each with the identity file the agent writes
# (.layoutd-volume), and the environment the agent passes:
#   LAYOUTD_STATE_VOLUME, LAYOUTD_STATE_VOLUME_UUID, LAYOUTD_CONTENT_UUIDS.
# Each refusal is exit 2 with one line naming the dir, what was expected
# and what was found, before anything is created or mounted; acceptance
# serves and publishes; without the variables the daemon runs as before.
TEST_NAME=wsfs-identity
: "${LAYOUTD_TESTS:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/wsfs/lib.sh"

SU=5b0c2f0e-1d7a-4a8e-9a57-2f1c3e4d5a61
C0U=0c0c0c0c-aaaa-4bbb-8ccc-000000000000
C1U=1c1c1c1c-aaaa-4bbb-8ccc-111111111111
wsfs_mkvol svol 64M
wsfs_mkvol c0 64M
wsfs_mkvol c1 64M
# identity FILE UUID NAME ROLE: what the agent writes (comments, unknown
# keys and stray spaces included, which the daemon must ignore).
identity() {
    printf '# written by layoutd when it carved this volume\nformat=1\n name = %s\nuuid= %s \nrole=%s\ncreated=2026-12-01T10:00:00Z\n' \
        "$3" "$2" "$4" > "$1"
}
identity "$WORK/svol/.layoutd-volume" "$SU" state-0 state
identity "$WORK/c0/.layoutd-volume" "$C0U" content-0 content
identity "$WORK/c1/.layoutd-volume" "$C1U" content-1 content
mkdir -p "$WORK/svol/ws1" "$WORK/mnt" "$WORK/elsewhere"

ENV_OK=(LAYOUTD_STATE_VOLUME="$WORK/svol" LAYOUTD_STATE_VOLUME_UUID="$SU" LAYOUTD_CONTENT_UUIDS="$C0U,$C1U" LAYOUTD_SHARDS=2)
ARGS_OK=(--state "$WORK/svol/ws1" --content "$WORK/c0,$WORK/c1" "$WORK/mnt")
# refused PATTERN [VAR=VALUE...] -- [daemon args...]: exit 2, one line that
# says PATTERN, nothing mounted. Default args: ARGS_OK.
refused() {
    local pattern=$1 rc=0; shift
    local -a envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
    [ $# -gt 0 ] || set -- "${ARGS_OK[@]}"
    env "${envs[@]}" "$WSFS" "$@" > "$WORK/out" 2>&1 || rc=$?
    assert_eq 2 "$rc" "exit status for '$pattern' ($(cat "$WORK/out"))"
    grep -q -- "$pattern" "$WORK/out" || fail "no '$pattern' in: $(cat "$WORK/out")"
    assert_eq 1 "$(wc -l < "$WORK/out")" "lines in the message for '$pattern'"
    ! findmnt --mountpoint "$WORK/mnt" > /dev/null || fail "mounted anyway: $pattern"
    log "refused: $(cat "$WORK/out")"
}
with() { # with VAR=VALUE...: ENV_OK with those replaced
    local -a out=() e
    local k
    for e in "${ENV_OK[@]}"; do
        k=${e%%=*}
        [[ " $* " == *" $k="* ]] || out+=("$e")
    done
    printf '%s\n' "${out[@]}" "$@"
}
mapfile_env() { mapfile -t E < <(with "$@"); }

# ---- acceptance ----
head -c 200000 /dev/urandom > "$WORK/blob"
mkdir -p "$WORK/ok"
env "${ENV_OK[@]}" "$WSFS" --stats-file "$WORK/ok/stats.json" "${ARGS_OK[@]}" 2> "$WORK/ok/log" &
pid=$!
track_pid "$pid"
wait_for 10 _wsfs_up "$pid" "$WORK/mnt" || fail "refused the right volumes: $(cat "$WORK/ok/log")"
cp "$WORK/blob" "$WORK/mnt/blob"
wait_for 20 eval '[ "$(stat_get ok stubs_punched)" = 1 ]' || fail "not stored: $(cat "$WORK/ok/stats.json")"
h=$(sha256sum < "$WORK/blob" | cut -d' ' -f1)
[ -f "$WORK/c$(( 0x${h:0:4} % 2 ))/objects/${h:0:2}/$h" ] || fail "the object is not in its shard"
cmp "$WORK/blob" "$WORK/mnt/blob" || fail "read back"
kill -TERM "$pid"; wait "$pid" || fail "exit status after SIGTERM"
# A state dir reached through a symlink: the resolved path counts.
ln -s "$WORK/svol/ws1" "$WORK/link"
env "${ENV_OK[@]}" "$WSFS" --state "$WORK/link" --content "$WORK/c0,$WORK/c1" "$WORK/mnt" 2> "$WORK/ok/log2" &
pid=$!
track_pid "$pid"
wait_for 10 _wsfs_up "$pid" "$WORK/mnt" || fail "refused a state dir reached through a symlink: $(cat "$WORK/ok/log2")"
kill -TERM "$pid"; wait "$pid" || fail "exit status after SIGTERM"

# ---- content refusals ----
mapfile_env LAYOUTD_CONTENT_UUIDS="$C1U,$C0U"
refused "--content $WORK/c0: expected the volume uuid=$C1U, found uuid=$C0U name=content-0 role=content" "${E[@]}" --
mapfile_env LAYOUTD_CONTENT_UUIDS="$C0U"
refused "LAYOUTD_CONTENT_UUIDS names 1 volume(s) for the 2 --content dir(s)" "${E[@]}" --
# The content volume is not mounted: its mount point is a bare directory.
umount "$WORK/c1"
refused "--content $WORK/c1: no .layoutd-volume there, and it is not a mount point: the volume (expected uuid=$C1U) is almost certainly not mounted" "${ENV_OK[@]}" --
[ -z "$(ls -A "$WORK/c1")" ] || fail "the daemon wrote into the bare mount point: $(ls -A "$WORK/c1")"
# Another (blank) filesystem mounted there.
wsfs_mkvol c1 64M
refused "--content $WORK/c1: the filesystem mounted there has no .layoutd-volume: expected the volume uuid=$C1U, found none" "${ENV_OK[@]}" --
# An identity file that is a symlink (to the right one, even) is not this filesystem's.
ln -s "$WORK/c0/.layoutd-volume" "$WORK/c1/.layoutd-volume"
refused "--content $WORK/c1: expected the volume uuid=$C1U, found .layoutd-volume that cannot be opened (Too many levels of symbolic links: a symlink)" "${ENV_OK[@]}" --
rm "$WORK/c1/.layoutd-volume"
printf 'uuid=%s\nuuid=%s\n' "$C1U" "$C0U" > "$WORK/c1/.layoutd-volume"
refused "--content $WORK/c1: expected the volume uuid=$C1U, found a .layoutd-volume with two different uuid= lines" "${ENV_OK[@]}" --
printf 'name=content-1\n' > "$WORK/c1/.layoutd-volume"
refused "--content $WORK/c1: expected the volume uuid=$C1U, found a .layoutd-volume without a uuid= line" "${ENV_OK[@]}" --
identity "$WORK/c1/.layoutd-volume" "$C1U" content-1 content

# ---- state refusals ----
mapfile_env LAYOUTD_STATE_VOLUME_UUID=00000000-0000-4000-8000-000000000000
refused "LAYOUTD_STATE_VOLUME $WORK/svol: expected the volume uuid=00000000-0000-4000-8000-000000000000, found uuid=$SU name=state-0 role=state" "${E[@]}" --
refused "--state $WORK/elsewhere: expected a directory below the state volume $WORK/svol" "${ENV_OK[@]}" -- \
    --state "$WORK/elsewhere" --content "$WORK/c0,$WORK/c1" "$WORK/mnt"
refused "--state $WORK/svol: expected a directory below the state volume" "${ENV_OK[@]}" -- \
    --state "$WORK/svol" --content "$WORK/c0,$WORK/c1" "$WORK/mnt"
ln -s "$WORK/elsewhere" "$WORK/svol/out"
refused "--state $WORK/svol/out: expected a directory below the state volume $WORK/svol ($WORK/svol), found $WORK/elsewhere" \
    "${ENV_OK[@]}" -- --state "$WORK/svol/out" --content "$WORK/c0,$WORK/c1" "$WORK/mnt"
# Below the volume's path, but on something mounted in between.
mkdir -p "$WORK/svol/tmpws"
mount -t tmpfs tmpfs "$WORK/svol/tmpws"
mkdir "$WORK/svol/tmpws/ws2"
refused "--state $WORK/svol/tmpws/ws2: expected the filesystem of the state volume $WORK/svol" "${ENV_OK[@]}" -- \
    --state "$WORK/svol/tmpws/ws2" --content "$WORK/c0,$WORK/c1" "$WORK/mnt"
umount "$WORK/svol/tmpws"
refused "LAYOUTD_STATE_VOLUME and LAYOUTD_STATE_VOLUME_UUID go together (only LAYOUTD_STATE_VOLUME is set)" \
    LAYOUTD_STATE_VOLUME="$WORK/svol" LAYOUTD_CONTENT_UUIDS="$C0U,$C1U" --
# The state volume is not mounted: the workspace dir below its mount
# point (as a stale path would have it) is on the filesystem below.
umount "$WORK/svol"
mkdir -p "$WORK/svol/ws1"
refused "LAYOUTD_STATE_VOLUME $WORK/svol: no .layoutd-volume there, and it is not a mount point: the volume (expected uuid=$SU) is almost certainly not mounted" "${ENV_OK[@]}" --
assert_eq ws1 "$(ls -A "$WORK/svol")" "what is in the bare state mount point"

# ---- without the variables: standalone, as before ----
mkdir -p "$WORK/alone"
LAYOUTD_SHARDS=2 "$WSFS" --state "$WORK/svol/ws1" --content "$WORK/c0,$WORK/c1" "$WORK/mnt" 2> "$WORK/alone/log" &
pid=$!
track_pid "$pid"
wait_for 10 _wsfs_up "$pid" "$WORK/mnt" || fail "standalone use refused: $(cat "$WORK/alone/log")"
kill -TERM "$pid"; wait "$pid" || fail "exit status after SIGTERM"
log "ok"
