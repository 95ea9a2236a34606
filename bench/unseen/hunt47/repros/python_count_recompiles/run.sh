#!/bin/bash
# The legacy repro and its stochastic migration on the XLA CPU device (under the lock), 10 steps each: the compile count
# after each step -> ../../verify_logs/repro.python_count_recompiles.device.txt
R=$(cd "$(dirname "$0")" && pwd); H=$(dirname "$(dirname "$R")"); ROOT=$(git -C "$H" rev-parse --show-toplevel); PY=${PYTHON:-/work/main/.venv/bin/python}
T=/tmp/hunt47r/pcr; rm -rf $T; mkdir -p $T; cp "$R/repro.py" $T/
(cd $T && PYTHONPATH=$ROOT "$PY" -m bf16_migrate migrate . --mode stochastic >/dev/null 2>&1)
O=$H/verify_logs/repro.python_count_recompiles.device.txt
{ echo "== legacy"; (cd "$R" && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU timeout 600 "$PY" repro.py 2>&1 | grep -v -i warn)
  echo "== migrated (stochastic)"; (cd $T && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU timeout 600 "$PY" repro.py 2>&1 | grep -v -i warn); } > "$O"
cat "$O"
