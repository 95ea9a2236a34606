#!/usr/bin/env bash
set -euo pipefail
cd "$(dirname "$0")"
env XLA_USE_BF16=1 PJRT_DEVICE=TPU python train_pc.py --points 64 "$@"
