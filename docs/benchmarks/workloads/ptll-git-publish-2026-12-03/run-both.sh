#!/bin/bash
cd /work/main
# Pass 1 ran ORDER="ptll wsfs", pass 2 ORDER="wsfs ptll"; results went to r1/ and r2/.
for arm in ${ORDER:-ptll wsfs}; do
  uptime > /tmp/wlp/$arm.load-start
  if [ $arm = ptll ]; then
    export LAYOUTD_WORKLOADS_COMMAND='["/work/main/build/tests/bench/fusehop/fusehop-passthrough_ll", "-f", "-o", "source={state_dir}", "{mountpoint}"]'
  else
    unset LAYOUTD_WORKLOADS_COMMAND
  fi
  flock /tmp/layoutd-machine.lock tests/workloads/run --profile full --n 8 --repeats 1 --tasks git,publish --out /tmp/wlp/$arm > /tmp/wlp/$arm.log 2>&1
  echo "rc $?" >> /tmp/wlp/$arm.log
  uptime > /tmp/wlp/$arm.load-end
done
