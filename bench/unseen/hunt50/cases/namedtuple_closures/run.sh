#!/bin/bash
# launcher used on the training VM
set -euo pipefail
export PJRT_DEVICE=${PJRT_DEVICE:-TPU}
export XLA_USE_BF16=1
python train_seq.py "$@"
