#!/bin/bash
# Is the tar extract's extra cost the daemon's durability (group commit:
# a journal record per change, a syncfs of the state volume per batch)?
# publish at N = 8 with the default commit and with --commit=none.
cd /work/main
for pass in 1 2; do
  order="default none"; [ $pass = 2 ] && order="none default"
  for arm in $order; do
    out=/tmp/wlp4/p$pass-$arm
    extra=(); [ $arm = none ] && extra=(--daemon-arg=--commit=none)
    echo "$out start $(uptime)" >> /tmp/wlp4/loads.txt
    flock /tmp/layoutd-machine.lock tests/workloads/run --profile full --n 8 --repeats 1 --tasks publish "${extra[@]}" --out $out > $out.log 2>&1
    echo "rc $?" >> $out.log
    echo "$out end $(uptime)" >> /tmp/wlp4/loads.txt
  done
done
