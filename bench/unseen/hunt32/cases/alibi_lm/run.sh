#!/usr/bin/env bash
set -euo pipefail
cd "$(dirname "$0")"
docker run --rm -e PJRT_DEVICE=TPU -e XLA_USE_BF16=1 -v "$PWD":/app -w /app us-docker.pkg.dev/my-proj/xla/train:latest \
  python train_lm.py --steps 30 "$@"
