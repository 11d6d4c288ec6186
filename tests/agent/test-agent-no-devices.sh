#!/usr/bin/env bash
# The agent decides and answers; device work runs in workers (src/engine).
# This holds agent/ to it: no device-layer header, no device library, no
# system call that touches a device or a filesystem's data path. A match
# names the file and the line. (A unit test: it reads source, runs nothing.)
# What it does not see: calls made for the agent inside src/ helpers. The
# one that blocks on purpose is the record's save (state_record_save:
# write, fsync, rename, fsync of its directory), which stays on the loop
# because the agent is the record's only writer and a worker is answered
# only once its change is durable.
set -euo pipefail
src=${LAYOUTD_SOURCE_DIR:?}
cd "$src/agent"
headers='"(loop|mount|probe|mkfs|bdi|udev|dev-util|backend-internal|vdo-[a-z]+|vdoformat)\.h"|<(libmount/libmount|blkid/blkid|libdevmapper|libudev|sys/mount|sys/statvfs|linux/loop|linux/fs)\.h>'
calls='\b(mount|umount2?|ioctl|statvfs|fstatvfs|syncfs|fsync|fdatasync|fallocate|blkid_[a-z_]+|dm_task_[a-z_]+|loop_device_[a-z_]+|mount_volume|mount_unmount|probe_path|bdi_[a-z_]+|vdo_dm_[a-z_]+|vdo_volume_[a-z_]+|udev_[a-z_]+)\s*\('
bad=0
if grep -nE "#include +($headers)" ./*.c ./*.h; then
    echo "test-agent-no-devices: agent/ includes a device-layer header (above)" >&2
    bad=1
fi
# Comments and strings may name the calls; code may not.
for f in ./*.c; do
    if sed -E -e 's://.*$::' -e 's/"([^"\\]|\\.)*"/""/g' "$f" | grep -nE "$calls" | grep -vE '^[0-9]+:\s*(\*|/\*)' |
            sed "s|^|$f:|" | grep .; then
        echo "test-agent-no-devices: $f calls a device or data-path function (above)" >&2
        bad=1
    fi
done
# And the check itself must be able to fail: a planted call is caught.
printf 'int f(void) { return statvfs("/", 0); }\n' | grep -qE "$calls" || { echo "the pattern misses a planted call" >&2; bad=1; }
[ "$bad" = 0 ] && echo "agent/ holds no device calls"
exit "$bad"
