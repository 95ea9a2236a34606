#!/bin/bash
# usage: repros/run_repro.sh NAME MODE: the legacy run of repros/NAME.py and its MODE migration (each under
# the XLA lock) -> verify_logs/repro.NAME.MODE.txt
N=$1; M=$2
cd /work/wt/hunt11
R=bench/unseen/hunt11/repros/$N.py
O=bench/unseen/hunt11/verify_logs/repro.$N.$M.txt
T=/tmp/h11repro.$N.$M.py
{
  echo "== legacy: PJRT_DEVICE=CPU python $R"
  flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU timeout 300 /work/main/.venv/bin/python $R 2>&1 | grep -v -i "warn\|xla_device()"
  echo "== migrated: bf16-migrate - --stdin-filename $R --mode $M < $R > $T; PJRT_DEVICE=CPU python $T"
  PYTHONPATH=/work/wt/hunt11 /work/main/.venv/bin/python -m bf16_migrate - --stdin-filename $R --mode $M < $R > $T 2>/dev/null
  diff $R $T | grep "^[<>]" | grep -v "^> \(def \|    \|\s*\"\)" | head -20
  flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=/work/wt/hunt11/bench/unseen/hunt11/repros timeout 300 /work/main/.venv/bin/python $T 2>&1 | grep -v -i "warn\|xla_device()" | tail -12
} > $O 2>&1
echo "repro $N $M done"
