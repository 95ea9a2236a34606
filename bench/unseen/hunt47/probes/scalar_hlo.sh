#!/bin/bash
# probes/scalar_hlo.py with XLA_USE_BF16=1 (f32 tensors) and without (bf16 tensors) -> verify_logs/probe.scalar_hlo.txt
H=$(cd "$(dirname "$0")/.." && pwd); PY=${PYTHON:-/work/main/.venv/bin/python}
O=$H/verify_logs/probe.scalar_hlo.txt
{ echo "== legacy (XLA_USE_BF16=1, f32 tensors)"; flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU XLA_USE_BF16=1 "$PY" "$H/probes/scalar_hlo.py" 2>&1 | grep -v -i "warn\|deprecat\|dev = "
  echo "== explicit bf16 (the migration)"; flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU "$PY" "$H/probes/scalar_hlo.py" 2>&1 | grep -v -i "warn\|dev = "; } > "$O"
cat "$O"
