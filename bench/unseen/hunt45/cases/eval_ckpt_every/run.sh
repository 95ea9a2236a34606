#!/bin/bash
# nightly run of the tabular classifier
set -euo pipefail
export XLA_USE_BF16=1
cd "$(dirname "$0")"
python train_cls.py --out "${OUT_DIR:-/tmp/cls_run}" "$@"
