#!/bin/bash
# hunt10's second verify queue (appended cases; each verify takes the XLA lock by itself)
cd /work/wt/hunt10/bench/unseen/hunt10
H=bench/unseen/hunt10
while read -r label mode script rest; do
  [ -z "$label" ] && continue
  [ -f verify_logs/$label.$mode.txt ] && continue
  timeout 900 ./vrun.sh "$label" "$mode" "$H/$script" $rest
done < "${1:-queue2.txt}"
