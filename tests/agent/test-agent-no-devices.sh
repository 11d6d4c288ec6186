#!/usr/bin/env bash
# The agent decides and answers; device work runs in workers (src/engine).
# This holds agent/daemon/ (and the log it links) to it: no device-layer header, no device library, no
# system call that touches a device or a filesystem's data path, and none
# of the src/ entry points that do such work inside (the engine's device
# verbs, placement's directory work, the reconcile's scan): those run in
# `layoutd --worker`. A match names the file and the line. (A unit test: it
# reads source, runs nothing.)
# Allowed on purpose: src/dev/block-monitor.h (a udev netlink socket, read
# without blocking: it touches no device); the record's writes, which the
# saver thread does (agent-record-saver.c) so the loop never waits on them;
# mkdir of the agent's own directories on the host (its socket's, its
# runtime directory), never on a volume.
set -euo pipefail
src=${LAYOUTD_SOURCE_DIR:?}
cd "$src/agent/daemon"
headers='"(loop|mount|probe|mkfs|bdi|udev|dev-util|fs-errors|identity|backend-internal|vdo-[a-z]+|vdoformat)\.h"|<(libmount/libmount|blkid/blkid|libdevmapper|libudev|sys/mount|sys/statvfs|linux/loop|linux/fs)\.h>'
calls='\b(mount|umount2?|ioctl|statvfs|fstatvfs|syncfs|fsync|fdatasync|fallocate|blkid_[a-z_]+|dm_task_[a-z_]+|loop_device_[a-z_]+|mount_volume|mount_unmount|probe_path|bdi_[a-z_]+|vdo_dm_[a-z_]+|vdo_volume_[a-z_]+|udev_[a-z_]+|engine_(observe|apply|plan|carve|grow|teardown|plan_teardown|reclaim|repair)|place_workspace_(create|create_on|make_dir|resume)|place_reconcile|place_rmtree_at|volumes_(apply|teardown|repair|observe[a-z_]*)|state_record_save)\s*\('
bad=0
# The daemon's files (layoutctl runs the engine in its own process, by
# design: it is the command, not the loop).
files=$(ls ./agent*.c ./agent*.h ./layoutd.c "$src/src/log/log.c" "$src/src/log/log.h")
# shellcheck disable=SC2086
if grep -nE "#include +($headers)" $files; then
    echo "test-agent-no-devices: agent/daemon/ includes a device-layer header (above)" >&2
    bad=1
fi
# Comments and strings may name the calls; code may not.
for f in $files; do
    case "$f" in *.h) continue ;; esac
    if sed -E -e 's://.*$::' -e 's/"([^"\\]|\\.)*"/""/g' "$f" | grep -nE "$calls" | grep -vE '^[0-9]+:\s*(\*|/\*)' |
            sed "s|^|$f:|" | grep .; then
        echo "test-agent-no-devices: $f calls a device or data-path function (above)" >&2
        bad=1
    fi
done
# And the check itself must be able to fail: a planted call is caught.
printf 'int f(void) { return statvfs("/", 0); }\n' | grep -qE "$calls" || { echo "the pattern misses a planted call" >&2; bad=1; }
[ "$bad" = 0 ] && echo "agent/daemon/ holds no device calls"
exit "$bad"
