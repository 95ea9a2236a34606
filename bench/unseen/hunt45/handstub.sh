#!/bin/bash
# usage: ./handstub.sh CASE MODE ENTRY TEXT [script args]: the codemod's migration of cases/CASE in MODE (a copy under
# /tmp/hunt45hs/TEXT) with hand/TEXT over ENTRY ("-": as migrated; "legacy": the case unmigrated), run with the stub
# torch_xla on the CPU -> verify_logs/hand.TEXT.stub.txt
CASE=$1; MODE=$2; ENTRY=$3; TEXT=$4; shift 4
H=$(cd "$(dirname "$0")" && pwd); ROOT=$(git -C "$H" rev-parse --show-toplevel); PY=${PYTHON:-/work/main/.venv/bin/python}
T=/tmp/hunt45hs/$CASE.$MODE.$TEXT; echo "T=$T"; [ -n "$CASE" ] || exit 9
rm -rf "$T"; mkdir -p "$(dirname "$T")"; cp -r "$H/cases/$CASE" "$T"
[ "$TEXT" != legacy ] && (cd "$T" && PYTHONPATH=$ROOT "$PY" -m bf16_migrate migrate . --mode "$MODE" >/dev/null 2>&1)
[ "$TEXT" != - ] && [ "$TEXT" != legacy ] && cp "$H/hand/$TEXT" "$T/$ENTRY"
O=$H/verify_logs/hand.$CASE.$MODE.$TEXT.stub.txt
(cd "$T" && PYTHONPATH=$H/repros/stub timeout 300 "$PY" "$ENTRY" "$@" 2>&1 | grep -v -i warn | tail -${TAILN:-6}) > "$O"
cat "$O"
