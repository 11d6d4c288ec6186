#!/bin/bash
# git status through one layoutd-wsfs mount: readdirplus auto vs off, and
# the directory cache, at N = 1. Requests from the daemon's stats file.
set -euo pipefail
B=/work/main/build/examples/wsfs/layoutd-wsfs
W=/tmp/gx/w; rm -rf $W; mkdir -p $W/src
cd $W/src && git init -q repo && cd repo
/usr/bin/python3 - <<'PY'
import os, random
r = random.Random(3)
for i in range(5000):
    d = f"d{i // 50:03d}/s{(i // 10) % 5}"
    os.makedirs(d, exist_ok=True)
    open(f"{d}/f{i}.c", "w").write("x" * r.randint(100, 4000))
PY
git add -A && git -c user.email=a@b -c user.name=a commit -qm init
n=0
trap 'for m in $W/*/mnt; do umount $m 2>/dev/null; done' EXIT
for arm in "$@"; do
  n=$((n + 1)); dir=$W/$n-$arm
  mkdir -p $dir/state $dir/content $dir/mnt
  args=(); case $arm in rdp-off) args=(--readdirplus=off);; cd-off) args=(--cache-dirs=off);; esac
  $B --state $dir/state --content $dir/content --stats-file=$dir/stats --commit=none "${args[@]}" $dir/mnt &
  for i in $(seq 50); do mountpoint -q $dir/mnt && break; sleep 0.1; done
  git clone -q --no-local $W/src/repo $dir/mnt/r
  cd $dir/mnt/r
  for k in 1 2 3 4 5; do
    s=$(date +%s.%N); git status --porcelain >/dev/null; e=$(date +%s.%N)
    echo "$arm status $k: $(echo "$e - $s" | bc) s"
  done
  cd /; kill -USR1 $! 2>/dev/null || true; sleep 0.5
  /usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1])).get(\"ops\"))" $dir/stats
  umount $dir/mnt; wait
done
