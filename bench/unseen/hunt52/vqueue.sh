#!/bin/bash
# usage: ./vqueue.sh LABEL CASE SCRIPT MODE [verify options]: verify (the codemod's own migration) on a fresh legacy copy
# of cases/CASE (a git repository), under the lock, --steps 6 -> verify_logs/LABEL.MODE.verify.txt (last line: exit N)
LABEL=$1; CASE=$2; SCRIPT=$3; MODE=$4; shift 4
H=$(cd "$(dirname "$0")" && pwd); ROOT=$(git -C "$H" rev-parse --show-toplevel); PY=${PYTHON:-/work/main/.venv/bin/python}
T=/tmp/hunt52v/$LABEL.$MODE; echo "T=$T"; [ -n "$LABEL" ] || exit 9
rm -rf "$T"; mkdir -p "$(dirname "$T")"; if [ -d "$H/cases/$CASE" ]; then cp -r "$H/cases/$CASE" "$T"; else cp -r "$H/$CASE" "$T"; fi
(cd "$T" && git init -q && git add -A && git -c user.email=h@x -c user.name=h commit -qm legacy)
O=$H/verify_logs/$LABEL.$MODE.verify.txt
(cd "$T" && date; flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$ROOT timeout 1500 "$PY" -m bf16_migrate verify "$SCRIPT" --mode "$MODE" --steps 6 "$@" > "$O" 2>&1; echo "exit $?" >> "$O"; date)
grep -E "VERDICT|^exit|BFM2" "$O" | head -12
