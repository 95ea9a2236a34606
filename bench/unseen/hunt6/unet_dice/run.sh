#!/usr/bin/env bash
# Smoke-train the tiny U-Net on synthetic blobs.
set -euo pipefail
cd "$(dirname "$0")"
export PJRT_DEVICE="${PJRT_DEVICE:-CPU}"
export XLA_USE_BF16=1
python3 seg_unet.py --steps 12 --size 32 "$@"
