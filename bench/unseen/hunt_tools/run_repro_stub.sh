#!/bin/bash
# usage: HUNT/repros/run_repro_stub.sh DIR MODE: a migrated copy of DIR/repro.py (the package of the checkout HUNT
# lies in) run with plain CPU torch and the stub torch_xla; output to HUNT/verify_logs/repro.NAME.MODE.txt. One copy
# for every hunt (each hunt's repros/run_repro_stub.sh is a link here, as repros/stub and repros/nb2py.py).
D=$(cd "$1" && pwd); M=$2; N=$(basename "$D")
R=$(cd "$(dirname "$0")" && pwd); H=$(dirname "$R"); ROOT=$(git -C "$H" rev-parse --show-toplevel)
PY=${PYTHON:-/work/main/.venv/bin/python}; O=$H/verify_logs/repro.$N.$M.txt
T=/tmp/$(basename "$H")rr/$N.$M; rm -rf "$T"; mkdir -p "$T"; cp -r "$D"/. "$T"/
{ echo "== bf16-migrate repro.py --mode $M (copy in $T)"
  (cd "$T" && PYTHONPATH=$ROOT "$PY" -m bf16_migrate migrate . --mode "$M" 2>&1 | grep -v "^    \[" | cut -c1-400)
  (cd "$D" && diff repro.py "$T/repro.py" | grep '^[<>] ' | grep -v "^> \(def \|    \|\s*\"\)")
  echo "== run migrated copy (stub torch_xla, CPU)"
  (cd "$T" && PYTHONPATH=$R/stub:$T timeout 120 "$PY" repro.py 2>&1 | grep -v -i warn | grep -E "Error|^[-0-9.e]+$|legacy switch|dtype|^torch" | tail -2)
} > "$O" 2>&1; echo "--- $N $M"; cat "$O"
