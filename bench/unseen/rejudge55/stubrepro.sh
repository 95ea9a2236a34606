#!/bin/bash
# usage: ./stubrepro.sh HUNT NAME MODE: a migrated copy of HUNT/repros/NAME (this worktree's package) run with CPU torch + hunt34's stub torch_xla -> stub/repro.HUNT.NAME.MODE.txt
H=$1; N=$2; M=$3; R=/work/wt/rejudge; D=$R/bench/unseen/$H/repros/$N; ST=$R/bench/unseen/hunt34/repros/stub; PY=/work/main/.venv/bin/python
O=$R/bench/unseen/rejudge55/stub/repro.$H.$N.$M.txt; T=/tmp/rj55rr/$H.$N.$M; rm -rf $T; mkdir -p $T; cp -r $D/. $T/
{ (cd $T && PYTHONPATH=$R $PY -m bf16_migrate migrate . --mode $M 2>&1 | grep -v "^    \[" | cut -c1-400)
  (cd $T && for f in $(cd $D && find . -name '*.py'); do diff $D/$f $f | grep '^[<>] ' | grep -v "^> \(def \|    \|\s*\"\)" | sed "s|^|$f: |"; done)
  echo "== run (stub)"; (cd $T && PYTHONPATH=$ST:$T timeout 120 $PY repro.py 2>&1 | grep -v -i warn | tail -4)
} > $O 2>&1; echo "--- $H $N $M"; cat $O
