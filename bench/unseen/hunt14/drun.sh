#!/bin/bash
# usage: drun.sh LABEL PATH [extra options]: --diff in the 3 modes -> verify_logs/LABEL.MODE.diff/.stderr
LABEL=$1; P=$2; shift 2
cd /work/wt/hunt14
L=bench/unseen/hunt14/verify_logs
for m in stochastic gpu-compatible amp; do
  PYTHONPATH=/work/wt/hunt14 /work/main/.venv/bin/python -m bf16_migrate "$P" --mode $m --diff "$@" > $L/$LABEL.$m.diff 2> $L/$LABEL.$m.stderr
  echo "== $m rc=$?"; grep -E "^[^ ].*BFM" $L/$LABEL.$m.stderr
done
