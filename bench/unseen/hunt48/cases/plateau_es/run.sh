#!/usr/bin/env bash
set -euo pipefail
cd "$(dirname "$0")"
env PJRT_DEVICE=TPU XLA_USE_BF16=1 python train_plateau.py --patience 2 --val-every 3 "$@"
