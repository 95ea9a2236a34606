#!/bin/bash
# The legacy repro and its amp migration on the XLA CPU device (under the lock) -> ../../verify_logs/repro.amp_cpu_scalar_tensor.device.txt
R=$(cd "$(dirname "$0")" && pwd); H=$(dirname "$(dirname "$R")"); ROOT=$(git -C "$H" rev-parse --show-toplevel); PY=${PYTHON:-/work/main/.venv/bin/python}
T=/tmp/hunt47r/acst; rm -rf $T; mkdir -p $T; cp "$R/repro.py" $T/
(cd $T && PYTHONPATH=$ROOT "$PY" -m bf16_migrate migrate . --mode amp 2>&1 | grep -E "BFM|changed")
O=$H/verify_logs/repro.amp_cpu_scalar_tensor.device.txt
{ echo "== legacy"; (cd "$R" && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU timeout 300 "$PY" repro.py 2>&1 | grep -E "^step|Error")
  echo "== migrated (amp)"; grep -n "autocast\|torch.tensor" $T/repro.py; (cd $T && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU timeout 300 "$PY" repro.py 2>&1 | grep -E "^step|Error" | cut -c1-220); 
  sed 's/torch.log(torch.tensor(float(W)))/torch.log(torch.tensor(float(W), device=h.device))/' $T/repro.py > $T/ondev.py
  sed 's/torch.log(torch.tensor(float(W)))/torch.log(torch.tensor(float(W), dtype=h.dtype))/' $T/repro.py > $T/hdtype.py
  for f in ondev hdtype; do echo "== amp + $f"; (cd $T && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU timeout 300 "$PY" $f.py 2>&1 | grep -E "^step|Error" | cut -c1-200); done; } > "$O"
cat "$O"
