#!/bin/bash
set -euo pipefail
export PJRT_DEVICE=${PJRT_DEVICE:-TPU}
export XLA_USE_BF16=1
python train.py "$@"
