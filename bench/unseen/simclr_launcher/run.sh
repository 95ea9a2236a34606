#!/usr/bin/env bash
# Contrastive pretraining on one TPU host. Extra arguments go to the script.
set -euo pipefail
cd "$(dirname "$0")"

export PJRT_DEVICE=${PJRT_DEVICE:-TPU}
XLA_USE_BF16=1 python3 simclr.py --temperature 0.2 "$@"
