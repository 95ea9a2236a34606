#!/bin/bash
# usage: ./vrepro.sh NAME MODE [verify options]: verify repros/NAME/repro.py (a fresh copy) on the XLA CPU device under the
# lock, --steps 12 -> verify_logs/repro.NAME.MODE.verify.txt
N=$1; M=$2; shift 2
H=$(cd "$(dirname "$0")" && pwd); ROOT=$(git -C "$H" rev-parse --show-toplevel); PY=${PYTHON:-/work/main/.venv/bin/python}
T=/tmp/hunt46vr/$N.$M; rm -rf "$T"; mkdir -p "$T"; cp -r "$H/repros/$N"/. "$T"/
O=$H/verify_logs/repro.$N.$M.verify.txt
(cd "$T" && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$ROOT timeout 900 "$PY" -m bf16_migrate verify repro.py --mode "$M" --steps 3 "$@" > "$O" 2>&1; echo "exit $?" >> "$O")
grep -E "VERDICT|^exit|^error|Error" "$O" | head -8
