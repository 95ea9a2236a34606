#!/usr/bin/env bash
# loads .env into the environment, then trains
set -euo pipefail
cd "$(dirname "$0")"
set -a; . ./.env; set +a
python train_kws.py "$@"
