#!/usr/bin/env bash
# Usage: ./run.sh [extra train.py args]
set -euo pipefail
cd "$(dirname "$0")"
python3 train.py --precision bf16 --steps 8 "$@"
