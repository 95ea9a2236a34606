#!/bin/bash
# usage: HUNT/after57/rr57.sh NAME MODE: run_repro_stub.sh writing under after57/: a migrated copy of
# HUNT/repros/NAME (in /tmp/rejudge57/rr/HUNT/NAME.MODE), its --diff (after57/repro.NAME.MODE.diff), the migrate
# report and the run with the stub torch_xla (after57/repro.NAME.MODE.txt), then a second migrate of the copy
# (idempotence line at the end of the .txt).
N=$1; M=$2; [ -n "$N" ] && [ -n "$M" ] || exit 1
A=$(cd "$(dirname "$0")" && pwd); H=$(dirname "$A"); HN=$(basename "$H"); ROOT=$(git -C "$H" rev-parse --show-toplevel)
PY=/work/main/.venv/bin/python; D=$H/repros/$N; R=$H/repros; O=$A/repro.$N.$M.txt
[ -d "$D" ] && [ -n "$HN" ] || exit 1
T=/tmp/rejudge57/rr/$HN/$N.$M; rm -rf "$T"; mkdir -p "$T"; cp -r "$D"/. "$T"/
(cd "$T" && PYTHONPATH=$ROOT "$PY" -m bf16_migrate . --mode "$M" --diff > "$A/repro.$N.$M.diff" 2>&1)
{ echo "== bf16-migrate . --mode $M (copy in $T)"
  (cd "$T" && PYTHONPATH=$ROOT "$PY" -m bf16_migrate migrate . --mode "$M" 2>&1 | grep -v "^    \[" | cut -c1-400)
  echo "== run migrated copy (stub torch_xla, CPU)"
  E=repro.py; [ -f "$T/train.py" ] && [ ! -f "$T/repro.py" ] && E=train.py
  (cd "$T" && PYTHONPATH=$R/stub:$T timeout 120 "$PY" $E 2>&1 | grep -v -i warn | grep -E "Error|^[-0-9.e]+$|legacy switch|dtype|^torch|standardised" | tail -4)
  echo "== second migrate (idempotence)"
  (cd "$T" && PYTHONPATH=$ROOT "$PY" -m bf16_migrate . --mode "$M" --diff 2>/dev/null | grep -c '^[-+][^-+]' | sed 's/^/changed lines: /')
} > "$O" 2>&1; echo "--- $HN $N $M"; cat "$O"
