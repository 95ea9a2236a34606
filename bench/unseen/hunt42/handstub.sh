#!/bin/bash
# usage: ./handstub.sh CASE MODE ENTRY TEXTS 'COMMAND': the codemod's migration of cases/CASE in MODE with hand texts
# over it (TEXTS as in against.sh), run with the stub torch_xla -> verify_logs/hand.<first text>.stub.txt
CASE=$1; MODE=$2; ENTRY=$3; TEXT=$4; CMD=$5
H=$(cd "$(dirname "$0")" && pwd); ROOT=$(git -C "$H" rev-parse --show-toplevel); PY=${PYTHON:-/work/main/.venv/bin/python}
T=/tmp/hunt42hs/$CASE.$MODE; rm -rf "$T"; mkdir -p "$T"; cp -r "$H/cases/$CASE"/. "$T"/
(cd "$T" && PYTHONPATH=$ROOT "$PY" -m bf16_migrate migrate . --mode "$MODE" >/dev/null 2>&1)
IFS=, read -ra TS <<< "$TEXT"
for t in "${TS[@]}"; do src=${t%%@*}; dst=$ENTRY; [ "$src" != "$t" ] && dst=${t#*@}; cp "$H/hand/$src" "$T/$dst"; done
O=$H/verify_logs/hand.${TS[0]%.py}.stub.txt
(cd "$T" && PYTHONPATH=$H/repros/stub timeout 300 bash -c "$CMD" 2>&1 | grep -v -i warn | grep -v '^\[stub\]' | tail -6) > "$O"
echo "== $TEXT"; cat "$O"
