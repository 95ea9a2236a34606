#!/usr/bin/env bash
# Sampling job: bf16 on the accelerator.
set -euo pipefail
cd "$(dirname "$0")"
export PJRT_DEVICE=${PJRT_DEVICE:-TPU}
export XLA_USE_BF16=1
python generate.py lm.pt
