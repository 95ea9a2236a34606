#!/bin/bash
# Taskfile.yml: a task's `env:` sets XLA_USE_BF16 and its `cmds:` runs `python train_intent.py`; the tool says the
# setting "reaches no Python script of the tree" (BFM110), with the template argument and without it
# -> verify_logs/repro.r_taskfile_cmds.txt (static only)
cd /work/wt/hunt13
T=$(mktemp -d); cp bench/unseen/hunt13/seqdepth_taskfile/* $T/
O=bench/unseen/hunt13/verify_logs/repro.r_taskfile_cmds.txt
{ echo "== as written (cmds: python train_intent.py --steps {{.STEPS}} --out runs/latest)"
  PYTHONPATH=/work/wt/hunt13 /work/main/.venv/bin/python -m bf16_migrate $T --mode stochastic --diff 2>&1 | grep "BFM"
  sed -i 's/ --steps {{.STEPS}}//' $T/Taskfile.yml
  echo "== without the template (cmds: python train_intent.py --out runs/latest)"
  PYTHONPATH=/work/wt/hunt13 /work/main/.venv/bin/python -m bf16_migrate $T --mode stochastic --diff 2>&1 | grep "BFM"
} | sed "s#$T#TREE#g" > $O
cat $O
