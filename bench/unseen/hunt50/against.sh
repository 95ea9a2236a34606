#!/bin/bash
# usage: ./against.sh LABEL MODE CASE ENTRY [TEXT] [verify options]: scratch repository /tmp/hunt50s/LABEL, HEAD = cases/CASE
# (legacy, carriers included), work tree = the codemod's migration of it in MODE, with hand/TEXT over ENTRY when TEXT is
# given (not "-"); then `verify ENTRY --against HEAD --mode MODE --steps 6` under the lock -> verify_logs/LABEL.MODE.txt
LABEL=$1; MODE=$2; CASE=$3; ENTRY=$4; TEXT=${5:--}; shift 4; [ $# -gt 0 ] && shift
H=$(cd "$(dirname "$0")" && pwd); ROOT=$(git -C "$H" rev-parse --show-toplevel); PY=${PYTHON:-/work/main/.venv/bin/python}
S=/tmp/hunt50s/$LABEL; rm -rf "$S"; mkdir -p "$S"; cp -r "$H/cases/$CASE"/. "$S"/
(cd "$S" && git init -q && git add -A && git -c user.email=h@x -c user.name=h commit -qm legacy)
(cd "$S" && PYTHONPATH=$ROOT "$PY" -m bf16_migrate migrate . --mode "$MODE" "$@" >/dev/null 2>&1)
[ "$TEXT" != - ] && cp "$H/hand/$TEXT" "$S/$ENTRY"
O=$H/verify_logs/$LABEL.$MODE.txt
(cd "$S" && git diff --stat; flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$ROOT timeout 1500 "$PY" -m bf16_migrate verify "$ENTRY" --against HEAD --mode "$MODE" --steps 6 > "$O" 2>&1; echo "exit $?" >> "$O")
grep -E "VERDICT|^exit|BFM2" "$O" | head -12
