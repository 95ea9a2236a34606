#!/bin/bash
# usage: ./vrepro.sh NAME MODE [verify options]: verify repros/NAME/repro.py --mode MODE --steps 3 on a fresh copy (a git
# repository), under the lock -> verify_logs/repro.NAME.MODE.verify.txt (last line: exit N)
NAME=$1; MODE=$2; shift 2
H=$(cd "$(dirname "$0")" && pwd); ROOT=$(git -C "$H" rev-parse --show-toplevel); PY=${PYTHON:-/work/main/.venv/bin/python}
T=/tmp/hunt52vr/$NAME.$MODE; echo "T=$T"; [ -n "$NAME" ] || exit 9
rm -rf "$T"; mkdir -p "$T"; cp -r "$H/repros/$NAME"/. "$T"/
(cd "$T" && git init -q && git add -A && git -c user.email=h@x -c user.name=h commit -qm legacy)
O=$H/verify_logs/repro.$NAME.$MODE.verify.txt
(cd "$T" && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$ROOT timeout 1500 "$PY" -m bf16_migrate verify repro.py --mode "$MODE" --steps 3 "$@" > "$O" 2>&1; echo "exit $?" >> "$O")
grep -E "VERDICT|^exit|BFM2" "$O" | head -12
