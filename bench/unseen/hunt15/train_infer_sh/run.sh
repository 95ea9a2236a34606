#!/usr/bin/env bash
# Train the price regressor, then score the held-out file with the checkpoint it wrote.
set -euo pipefail
cd "$(dirname "$0")"
export PJRT_DEVICE=${PJRT_DEVICE:-TPU}
export XLA_DOWNCAST_BF16=1
STEPS=${STEPS:-40}
mkdir -p ckpt out
python train.py --steps "$STEPS" --ckpt ckpt/regressor.pt
python infer.py --ckpt ckpt/regressor.pt --out out/scores.npy
