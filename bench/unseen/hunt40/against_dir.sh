#!/bin/bash
# usage: ./against_dir.sh LABEL MODE CASE ENTRY HANDDIR [verify options]: scratch repository /tmp/hunt40s/LABEL, HEAD = cases/CASE
# (legacy), work tree = the files of hand/HANDDIR (a migration written by hand, carriers included); then
# `verify ENTRY --against HEAD --mode MODE --steps 8` under the lock -> verify_logs/LABEL.MODE.txt
LABEL=$1; MODE=$2; CASE=$3; ENTRY=$4; HD=$5; shift 5
H=$(cd "$(dirname "$0")" && pwd); ROOT=$(git -C "$H" rev-parse --show-toplevel); PY=${PYTHON:-/work/main/.venv/bin/python}
S=/tmp/hunt40s/$LABEL; rm -rf "$S"; mkdir -p "$S"; cp -r "$H/cases/$CASE"/. "$S"/
(cd "$S" && git init -q && git add -A && git -c user.email=h@x -c user.name=h commit -qm legacy)
cp -r "$H/hand/$HD"/. "$S"/
O=$H/verify_logs/$LABEL.$MODE.txt
(cd "$S" && git diff --stat; flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$ROOT timeout 1500 "$PY" -m bf16_migrate verify "$ENTRY" --against HEAD --mode "$MODE" --steps 8 "$@" > "$O" 2>&1; echo "exit $?" >> "$O")
grep -E "VERDICT|^exit|BFM2" "$O" | head -12
