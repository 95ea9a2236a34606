#!/bin/sh
# continual-learning run: split tasks, one head per task, EWC between tasks
export PJRT_DEVICE=TPU
export XLA_USE_BF16=1
python ewc.py --tasks 3 --steps "${STEPS:-6}" --lam 50
