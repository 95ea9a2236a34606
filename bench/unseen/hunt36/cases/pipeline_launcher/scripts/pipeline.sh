#!/usr/bin/env bash
# Train, then evaluate the EMA weights. Both steps run bf16 on the TPU.
set -euo pipefail
cd "$(dirname "$0")/.."
export XLA_USE_BF16=1
mkdir -p out
python train.py --ckpt out/ckpt.pt --steps "${STEPS:-10}"
python evaluate.py --ckpt out/ckpt.pt --preds out/preds.npy
echo "pipeline done: $(ls out)"
