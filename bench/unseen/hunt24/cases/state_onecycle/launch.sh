#!/usr/bin/env bash
# Single-host run on a trn1.2xlarge; resumes from ckpt/last.pt when it exists.
set -euo pipefail
cd "$(dirname "$0")"
STEPS=${STEPS:-60}
RESUME=()
if [[ -f ckpt/last.pt ]]; then RESUME=(--resume ckpt/last.pt); fi
XLA_USE_BF16=1 NEURON_CC_FLAGS="--retry_failed_compilation" \
  python -m deep_resnet --steps "$STEPS" --ckpt-dir ckpt "${RESUME[@]}" "$@"
