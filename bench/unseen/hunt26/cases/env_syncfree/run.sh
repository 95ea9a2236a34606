#!/usr/bin/env bash
set -euo pipefail
cd "$(dirname "$0")"
set -a
source .env
set +a
python train_forecast.py --epochs "${EPOCHS:-3}" --accum 4 "$@"
