#!/bin/bash
# usage: ./vqueue.sh "CASE|MODE|SCRIPT|extra verify args" ...: verify each on the XLA CPU device, one at a time
# (flock /tmp/bfm-xla.lock), output to verify_logs/verify.CASE.MODE.txt
H=$(cd "$(dirname "$0")" && pwd); ROOT=$(git -C "$H" rev-parse --show-toplevel)
for spec in "$@"; do
  IFS='|' read -r c m s extra <<< "$spec"
  out=$H/verify_logs/verify.$c.$m.txt
  ( cd "$H/cases/$c" && echo "# $(date -u +%H:%M) verify $s --mode $m --steps 10 $extra" && \
    flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$ROOT timeout 900 /work/main/.venv/bin/python -m bf16_migrate \
      verify $s --mode $m --steps 10 $extra; echo "# rc=$?" ) > "$out" 2>&1
done
