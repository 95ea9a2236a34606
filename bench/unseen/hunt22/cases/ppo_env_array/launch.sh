#!/usr/bin/env bash
set -euo pipefail
# PPO on the toy corridor task, one Neuron core per worker.
ARGS=(
  --updates "${UPDATES:-20}"
  --horizon 128
  --clip 0.2
  --seed "${SEED:-0}"
)
NPROC=${NPROC:-1}
env XLA_USE_BF16=1 NEURON_CC_FLAGS="--retry_failed_compilation" \
  torchrun --nproc_per_node "$NPROC" train_ppo.py "${ARGS[@]}" "$@"
