#!/bin/bash
# usage: ./vqueue.sh LABEL CASE SCRIPT MODE [verify options]: verify (the codemod's own migration) on a fresh legacy copy
# of cases/CASE (a git repository), under the lock, --steps ${VSTEPS:-6} -> verify_logs/LABEL.MODE.verify.txt (last line: exit N)
# (STEPS=${CSTEPS:-5} in the environment, so each script ends by itself and its post-training code runs before --steps stops it)
LABEL=$1; CASE=$2; SCRIPT=$3; MODE=$4; shift 4
H=$(cd "$(dirname "$0")" && pwd); ROOT=$(git -C "$H" rev-parse --show-toplevel); PY=${PYTHON:-/work/main/.venv/bin/python}
T=/tmp/hunt49v/$LABEL.$MODE; echo "T=$T"; [ -n "$LABEL" ] || exit 9
rm -rf "$T"; mkdir -p "$(dirname "$T")"; cp -r "$H/cases/$CASE" "$T"
(cd "$T" && git init -q && git add -A && git -c user.email=h@x -c user.name=h commit -qm legacy)
O=$H/verify_logs/$LABEL.$MODE.verify.txt
(cd "$T" && date; STEPS=${CSTEPS:-5} flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$ROOT timeout 1500 "$PY" -m bf16_migrate verify "$SCRIPT" --mode "$MODE" --steps ${VSTEPS:-6} "$@" > "$O" 2>&1; echo "exit $?" >> "$O"; date)
grep -E "VERDICT|^exit|BFM2" "$O" | head -12
