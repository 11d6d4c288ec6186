#!/bin/bash
# The pool's share (issue 20, direction 3's upper bound): wsfs with and
# without its content pool (--cas-threshold=0), git and publish, N = 8.
cd /work/main
for arm in ${ORDER:-nocas wsfs}; do
  uptime > /tmp/wlp3/$arm.load-start
  extra=()
  [ $arm = nocas ] && extra=(--daemon-arg=--cas-threshold=0)
  flock /tmp/layoutd-machine.lock tests/workloads/run --profile full --n 8 --repeats 1 --tasks git,publish "${extra[@]}" --out /tmp/wlp3/$arm > /tmp/wlp3/$arm.log 2>&1
  echo "rc $?" >> /tmp/wlp3/$arm.log
  uptime > /tmp/wlp3/$arm.load-end
done
