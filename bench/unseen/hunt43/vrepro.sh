#!/bin/bash
# usage: ./vrepro.sh NAME MODE: verify repro.py of repros/NAME (--steps 4) on a fresh copy, under the lock
# -> verify_logs/repro.NAME.MODE.verify.txt
N=$1; M=$2
H=$(cd "$(dirname "$0")" && pwd); ROOT=$(git -C "$H" rev-parse --show-toplevel); PY=${PYTHON:-/work/main/.venv/bin/python}
T=/tmp/hunt43v/repro.$N.$M; echo "copy: $H/repros/$N -> $T"
[ -n "$N" ] && [ -n "$M" ] && rm -rf "$T"; mkdir -p "$T"; cp -r "$H/repros/$N"/. "$T"/
(cd "$T" && git init -q && git add -A && git -c user.email=h@x -c user.name=h commit -qm legacy)
O=$H/verify_logs/repro.$N.$M.verify.txt
(cd "$T" && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$ROOT timeout 900 "$PY" -m bf16_migrate verify repro.py --mode "$M" --steps 4 > "$O" 2>&1; echo "exit $?" >> "$O")
tail -25 "$O"
