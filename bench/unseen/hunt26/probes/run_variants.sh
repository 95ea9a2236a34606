#!/bin/bash
# run_variants.sh MODE FILE...: migrate a copy of each probe in MODE, run it under the stub, print the last line
M=$1; shift
for f in "$@"; do
  T=/tmp/hunt26probe/$(basename $f .py).$M; rm -rf $T; mkdir -p $T; cp $f $T/repro.py
  (cd $T && PYTHONPATH=/work/wt/hunt26 /work/main/.venv/bin/python -m bf16_migrate migrate . --mode $M >/dev/null 2>&1)
  out=$(cd $T && PYTHONPATH=/work/wt/hunt26/bench/unseen/hunt26/repros/stub:. timeout 120 /work/main/.venv/bin/python repro.py 2>&1 | grep -v -i warn | grep -E "Error|dtype" | tr '\n' '|')
  echo "$(basename $f) [$M]: $out"
done
