#!/bin/bash
# usage: ./vqueue.sh LABEL CASE SCRIPT MODE [verify options]: verify (no --against) on a fresh copy of cases/CASE,
# under flock /tmp/bfm-xla.lock, --steps 6 -> verify_logs/LABEL.MODE.verify.txt (last line: exit N)
LABEL=$1; CASE=$2; SCRIPT=$3; MODE=$4; shift 4
H=$(cd "$(dirname "$0")" && pwd); ROOT=$(git -C "$H" rev-parse --show-toplevel); PY=${PYTHON:-/work/main/.venv/bin/python}
T=/tmp/hunt50v/$LABEL.$MODE; rm -rf "$T"; mkdir -p "$(dirname "$T")"; cp -r "$H/cases/$CASE" "$T"
O=$H/verify_logs/$LABEL.$MODE.verify.txt
(cd "$T" && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$ROOT timeout 1500 "$PY" -m bf16_migrate verify "$SCRIPT" --mode "$MODE" --steps 6 "$@" > "$O" 2>&1; echo "exit $?" >> "$O")
tail -25 "$O"
