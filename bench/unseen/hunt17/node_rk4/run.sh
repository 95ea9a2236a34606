#!/bin/bash
# fit the neural ODE on one XLA device in bf16
set -euo pipefail
cd "$(dirname "$0")"
export PJRT_DEVICE=${PJRT_DEVICE:-TPU}
export XLA_USE_BF16=1
python node_rk4.py --steps 10 --n_t 12 "$@"
