#!/bin/bash
# device probe for gap 7: repros/downcast_f64_input_hook as written (legacy, XLA_DOWNCAST_BF16 set by the script) and
# its stochastic migration, each run directly on the XLA CPU device under the lock -> verify_logs/probe.downcast_f64_input_hook.txt
H=$(cd "$(dirname "$0")" && pwd); ROOT=$(git -C "$H" rev-parse --show-toplevel); PY=${PYTHON:-/work/main/.venv/bin/python}
T=/tmp/hunt41probe; rm -rf $T; mkdir -p $T/legacy $T/migrated
cp "$H/repros/downcast_f64_input_hook/repro.py" $T/legacy/; cp "$H/repros/downcast_f64_input_hook/repro.py" $T/migrated/
(cd $T/migrated && PYTHONPATH=$ROOT "$PY" -m bf16_migrate migrate . --mode stochastic > /dev/null 2>&1)
O=$H/verify_logs/probe.downcast_f64_input_hook.txt; : > "$O"
for w in legacy migrated; do
  echo "== $w (XLA CPU device)" >> "$O"
  (cd $T/$w && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU timeout 600 "$PY" repro.py 2>&1 | grep -v -i warn | grep -E "standard|^[0-9.e-]+$|Error" | head -6) >> "$O"
done
cat "$O"
