#!/bin/bash
# usage: [LEGACY_ENV=K=V] repros/run_repro.sh NAME MODE [script args...]: the legacy run of repros/NAME.py and its
# MODE migration (each under the XLA lock) -> verify_logs/repro.NAME.MODE.txt. With LEGACY_ENV the legacy run gets
# that variable (a launcher's setting) and the migration --legacy-env with it.
N=$1; M=$2; shift 2
cd /work/wt/hunt14
R=bench/unseen/hunt14/repros/$N.py
O=bench/unseen/hunt14/verify_logs/repro.$N.$M.txt
T=/tmp/h14repro.$N.$M.py
LE=(); [ -n "$LEGACY_ENV" ] && LE=(--legacy-env "$LEGACY_ENV")
{
  echo "== legacy: ${LEGACY_ENV:+$LEGACY_ENV }PJRT_DEVICE=CPU python $R $*"
  flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU $LEGACY_ENV PYTHONPATH=/work/wt/hunt14/bench/unseen/hunt14/repros timeout 300 /work/main/.venv/bin/python $R "$@" 2>&1 | grep -v -i "warn\|xla_device()\|mark_step()"
  echo "== migrated: bf16-migrate - --stdin-filename $R --mode $M ${LE[*]} < $R > $T; PJRT_DEVICE=CPU python $T $*"
  PYTHONPATH=/work/wt/hunt14 /work/main/.venv/bin/python -m bf16_migrate - --stdin-filename $R --mode $M "${LE[@]}" < $R > $T 2>/dev/null
  diff $R $T | grep "^[<>]" | grep -v "^> \(def \|    \|\s*\"\)" | head -20
  flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=/work/wt/hunt14/bench/unseen/hunt14/repros timeout 300 /work/main/.venv/bin/python $T "$@" 2>&1 | grep -v -i "warn\|xla_device()\|mark_step()" | tail -12
} > $O 2>&1
echo "repro $N $M done"
