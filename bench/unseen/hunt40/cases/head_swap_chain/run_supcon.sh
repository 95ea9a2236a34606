#!/usr/bin/env bash
# supervised-contrastive fine-tuning on the pod
set -euo pipefail
cd "$(dirname "$0")"
env PJRT_DEVICE=TPU XLA_USE_BF16=1 python supcon.py --steps "${STEPS:-8}" --temp 0.1
