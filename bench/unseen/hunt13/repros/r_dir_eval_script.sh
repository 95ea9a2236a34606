#!/bin/bash
# --legacy-env on a directory: the evaluation script (a model moved to the device, no optimizer) is migrated when
# named alone, skipped without a word next to a training script, and refused (BFM110 "none builds an optimizer")
# in a directory of its own -> verify_logs/repro.r_dir_eval_script.txt (no XLA: static only)
cd /work/wt/hunt13
V=bench/unseen/hunt13/points_shared_env/variant
O=bench/unseen/hunt13/verify_logs/repro.r_dir_eval_script.txt
T=$(mktemp -d); cp $V/evaluate_avg.py $V/common.py $T/
run() { PYTHONPATH=/work/wt/hunt13 /work/main/.venv/bin/python -m bf16_migrate "$@" --mode stochastic --legacy-env XLA_USE_BF16=1 --diff 2>&1; }
{
  echo "== 1. the directory (train_points.py, evaluate_avg.py, common.py): files changed"
  run $V | grep "^+++ \|would change"
  echo "== 2. evaluate_avg.py alone: files changed"
  run $V/evaluate_avg.py | grep "^+++ \|would change"
  echo "== 3. a directory with evaluate_avg.py and common.py only"
  run $T | grep "BFM110\|would change" | cut -c1-400
} > $O
cat $O
