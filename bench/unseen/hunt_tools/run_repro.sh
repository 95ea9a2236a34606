#!/bin/bash
# usage: [LEGACY_ENV=K=V] HUNT/repros/run_repro.sh NAME MODE [script args...]: the legacy run of HUNT/repros/NAME.py
# and its MODE migration by the package of the checkout HUNT lies in (each run under the XLA lock)
# -> HUNT/verify_logs/repro.NAME.MODE.txt. With LEGACY_ENV the legacy run gets that variable (a launcher's setting)
# and the migration --legacy-env with it. One copy for every hunt (each hunt's repros/run_repro.sh is a link here).
N=$1; M=$2; shift 2
REPROS=$(cd "$(dirname "$0")" && pwd); H=$(dirname "$REPROS"); ROOT=$(git -C "$H" rev-parse --show-toplevel)
PY=${PYTHON:-/work/main/.venv/bin/python}
cd "$ROOT"
R=${REPROS#"$ROOT"/}/$N.py
O=$H/verify_logs/repro.$N.$M.txt
T=/tmp/$(basename "$H")repro.$N.$M.py
LE=(); [ -n "$LEGACY_ENV" ] && LE=(--legacy-env "$LEGACY_ENV")
{
  echo "== legacy: ${LEGACY_ENV:+$LEGACY_ENV }PJRT_DEVICE=CPU python $R $*"
  flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU $LEGACY_ENV PYTHONPATH=$REPROS timeout 300 "$PY" $R "$@" 2>&1 | grep -v -i "warn\|xla_device()\|mark_step()"
  echo "== migrated: bf16-migrate - --stdin-filename $R --mode $M ${LE[*]} < $R > $T; PJRT_DEVICE=CPU python $T $*"
  PYTHONPATH=$ROOT "$PY" -m bf16_migrate - --stdin-filename $R --mode $M "${LE[@]}" < $R > $T 2>/dev/null
  diff $R $T | grep "^[<>]" | grep -v "^> \(def \|    \|\s*\"\)" | head -20
  flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$REPROS timeout 300 "$PY" $T "$@" 2>&1 | grep -v -i "warn\|xla_device()\|mark_step()" | tail -12
} > $O 2>&1
echo "repro $N $M done"
