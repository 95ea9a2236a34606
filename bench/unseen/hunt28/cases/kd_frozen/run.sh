#!/bin/bash
# distil the frozen teacher into the student on one device
set -euo pipefail
cd "$(dirname "$0")"
PJRT_DEVICE=${PJRT_DEVICE:-CPU} XLA_USE_BF16=1 python distill.py --steps 10 --temperature 4 --out out "$@"
