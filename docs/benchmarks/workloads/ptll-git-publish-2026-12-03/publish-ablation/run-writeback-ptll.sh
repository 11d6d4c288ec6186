#!/bin/bash
# publish at N = 8: the default daemon against --writeback-cache=off and
# passthrough_ll, three passes, order rotating; a warm-up run first.
cd /work/main
PT='["/work/main/build/tests/bench/fusehop/fusehop-passthrough_ll", "-f", "-o", "source={state_dir}", "{mountpoint}"]'
run() { # arm out
  local arm=$1 out=$2 extra=()
  unset LAYOUTD_WORKLOADS_COMMAND
  case $arm in nowb) extra=(--daemon-arg=--writeback-cache=off);; ptll) export LAYOUTD_WORKLOADS_COMMAND="$PT";; esac
  echo "$out start $(uptime)" >> /tmp/wlp4/loads2.txt
  flock /tmp/layoutd-machine.lock tests/workloads/run --profile full --n 8 --repeats 1 --tasks publish "${extra[@]}" --out $out > $out.log 2>&1
  echo "rc $?" >> $out.log
}
run default /tmp/wlp4/warmup
for pass in 1 2 3; do
  case $pass in 1) order="default nowb ptll";; 2) order="nowb ptll default";; 3) order="ptll default nowb";; esac
  for arm in $order; do run $arm /tmp/wlp4/q$pass-$arm; done
done
