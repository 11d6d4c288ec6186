#!/bin/bash
# rm -rf / cp -al of an 8000-file tree through one wsfs daemon, with and
# without the tool and the daemon pinned to one CPU.
set -e
W=$(mktemp -d /tmp/pinexp.XXXX)
truncate -s 8G $W/img; L=$(losetup --find --show --direct-io=on $W/img)
mkfs.ext4 -q $L; mkdir $W/vol $W/mnt; mount $L $W/vol; mkdir $W/vol/state $W/vol/content
cleanup() {
  set +e  # (under set -e the first failing unmount ended the cleanup: it leaked mounts)
  fusermount3 -u $W/mnt 2>/dev/null || umount -l $W/mnt 2>/dev/null
  # the daemon may still hold the volume for a moment after its unmount
  for i in $(seq 40); do umount $W/vol 2>/dev/null && break; sleep 0.25; done
  losetup -d $L; rm -rf $W
}
trap cleanup EXIT
SRC=${SRC:?}
for mode in free pinned free pinned; do
  if [ $mode = pinned ]; then PIN="taskset -c 0"; else PIN=""; fi
  $PIN /work/main/build/examples/wsfs/layoutd-wsfs --state $W/vol/state --content $W/vol/content --commit=none $W/mnt &
  D=$!; for i in $(seq 50); do mountpoint -q $W/mnt && break; sleep 0.1; done
  cp -a $SRC $W/mnt/store; sync
  t0=$(date +%s.%N); $PIN cp -al $W/mnt/store $W/mnt/link; t1=$(date +%s.%N)
  sync; $PIN rm -rf $W/mnt/link; t2=$(date +%s.%N)
  sync; $PIN rm -rf $W/mnt/store; t3=$(date +%s.%N)
  echo "$mode link $(echo "$t1-$t0"|bc) rm_link $(echo "$t2-$t1"|bc) rm_store $(echo "$t3-$t2"|bc)"
  kill -TERM $D; wait $D || true
done
