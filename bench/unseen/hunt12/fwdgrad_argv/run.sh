#!/usr/bin/env bash
# forward-gradient baseline, bf16 on the TPU
set -euo pipefail
cd "$(dirname "$0")"
export PJRT_DEVICE=${PJRT_DEVICE:-TPU}
python3 fwdgrad.py --bf16 --steps 40 --out out "$@"
