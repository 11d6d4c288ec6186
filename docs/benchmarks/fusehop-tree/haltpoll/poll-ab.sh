#!/bin/bash
P=/sys/module/haltpoll/parameters/guest_halt_poll_ns
trap 'echo 0 > $P' EXIT
cd /work/main
for pass in off on off on; do
  if [ $pass = on ]; then echo 200000 > $P; else echo 0 > $P; fi
  echo "== $pass $(cat $P) load $(cut -d' ' -f1-3 /proc/loadavg)"
  env LAYOUTD_BUILD_DIR=$PWD/build LAYOUTD_TESTS=$PWD/tests BENCH_OUT=/tmp/fh-poll-$pass-$RANDOM tests/bench/fusehop/bench-fusehop.sh --profile full --kinds tree --arms host,native,wsfs --ns 1,8 --repeats 1 --tree-files 8000 2>&1 | grep -E "^\| (copy|link|rm_link|rm_copy) \|" 
done
