#!/bin/bash
# Native cost of removing a package tree made of reflink clones (what the
# package store's links become in a workspace) against one made of hard
# links (what the host's pnpm makes), on one loop-XFS volume, no FUSE.
# Usage: rm-clones.sh WORKDIR FILES ROUNDS
set -euo pipefail
work=$1 files=${2:-20000} rounds=${3:-3}
img=$work/xfs.img mnt=$work/mnt
mkdir -p "$mnt"
truncate -s 4G "$img"
mkfs.xfs -q -f "$img"
loop=$(losetup --find --show --direct-io=on "$img")
cleanup() { umount "$mnt" 2>/dev/null || true; losetup -d "$loop" 2>/dev/null || true; rm -f "$img"; }
trap cleanup EXIT
mount -o noatime "$loop" "$mnt"
xfs_info "$mnt" | grep -o 'reflink=[01]'
# The store: FILES files, log-normal sizes around 1.5 KiB, in packages of 20.
/usr/bin/python3 - "$mnt/store" "$files" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(7)
for i in range(n):
    d = os.path.join(root, f"pkg{i // 20:05d}", "lib")
    os.makedirs(d, exist_ok=True)
    size = min(int(rnd.lognormvariate(7.3, 1.2)), 4 << 20)
    with open(os.path.join(d, f"f{i}.js"), "wb") as f:
        f.write(rnd.randbytes(max(size, 1)))
PY
sync
t() { # label, command...: wall and CPU seconds of the command, then of a sync
    local label=$1; shift
    local s=$(date +%s.%N)
    /usr/bin/time -f "%U %S" -o "$work/cpu" "$@"
    local m=$(date +%s.%N)
    sync -f "$mnt"
    local e=$(date +%s.%N)
    printf '%s wall %.3f sync %.3f cpu %s\n' "$label" "$(echo "$m - $s" | bc)" "$(echo "$e - $m" | bc)" \
        "$(awk '{ printf "%.2f", $1 + $2 }' "$work/cpu")"
}
for r in $(seq 1 "$rounds"); do
    echo "round $r (load $(cut -d' ' -f1 /proc/loadavg))"
    # The order alternates, so that neither arm always runs on the
    # other's freshly freed space.
    for arm in $( ((r % 2)) && echo "links clones" || echo "clones links"); do
        case $arm in
        links) t "  make links " cp -al "$mnt/store" "$mnt/links" ;;
        clones) t "  make clones" cp -a --reflink=always "$mnt/store" "$mnt/clones" ;;
        esac
    done
    for arm in $( ((r % 2)) && echo "links clones" || echo "clones links"); do
        t "  rm $arm" rm -rf "$mnt/$arm"
    done
done
