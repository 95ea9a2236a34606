#!/usr/bin/env bash
set -euo pipefail
cd "$(dirname "$0")"
set -a
. ./tpu.env
set +a
exec python3 train_imbalanced.py --steps "${TRAIN_STEPS}" --accum 4 "$@"
