#!/bin/bash
# launch the CTC run on one XLA device in bf16
set -e
cd "$(dirname "$0")"
export PJRT_DEVICE=${PJRT_DEVICE:-CPU}
export XLA_USE_BF16=1
python train.py --steps "${STEPS:-12}" "$@"
