#!/bin/bash
# usage: ./vhand.sh NAME CASE SCRIPT MODE [verify options]: a fresh git copy of cases/CASE committed as "legacy", then
# hand/NAME/* copied over it, verify SCRIPT --against HEAD --mode MODE --steps 6 under the lock
# -> verify_logs/hand.NAME.verify.txt (last line: exit N)
NAME=$1; CASE=$2; SCRIPT=$3; MODE=$4; shift 4
H=$(cd "$(dirname "$0")" && pwd); ROOT=$(git -C "$H" rev-parse --show-toplevel); PY=${PYTHON:-/work/main/.venv/bin/python}
T=/tmp/hunt52vh/$NAME; echo "T=$T"; [ -n "$NAME" ] || exit 9
rm -rf "$T"; mkdir -p "$(dirname "$T")"; cp -r "$H/cases/$CASE" "$T"
(cd "$T" && git init -q && git add -A && git -c user.email=h@x -c user.name=h commit -qm legacy)
cp "$H/hand/$NAME"/* "$T"/
O=$H/verify_logs/hand.$NAME.verify.txt
(cd "$T" && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$ROOT timeout 1500 "$PY" -m bf16_migrate verify "$SCRIPT" --against HEAD --mode "$MODE" --steps 6 "$@" > "$O" 2>&1; echo "exit $?" >> "$O")
grep -E "VERDICT|^exit|BFM2" "$O" | head -12
