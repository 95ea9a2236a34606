#!/bin/bash
# device runs after meta_assign's loading was made runnable on the device (map_location="cpu" + per-tensor move)
cd "$(dirname "$0")"
./vqueue.sh meta_assign meta_assign finetune.py stochastic --legacy-env XLA_USE_BF16=1
./vqueue.sh host_made_state host_made_state train_dqn.py amp
