#!/usr/bin/env bash
# Train the BPR recommender on every host of the pod slice.
set -euo pipefail
TPU_NAME=${TPU_NAME:-rec-v4-32}
python -m torch_xla.distributed.xla_dist \
  --tpu="$TPU_NAME" --restart-tpuvm-pod-server \
  --env XLA_USE_BF16=1 --env PJRT_DEVICE=TPU \
  -- python /home/train/train_rec.py --epochs 4 --dim 32 "$@"
