#!/usr/bin/env bash
# Nightly batch scoring of the review queue with the small sentiment model.
#   ./serve.sh                       # the queue in data/, the checkpoint CI builds
#   ./serve.sh --batch-size 64       # extra arguments go to predict.py
set -euo pipefail
cd "$(dirname "$0")"

CKPT_DIR=${CKPT_DIR:-checkpoints/sentiment-small}
OUT_DIR=${OUT_DIR:-predictions}

if [ ! -f "$CKPT_DIR/model.pt" ]; then
  python tools/make_smoke_checkpoint.py --out "$CKPT_DIR"
fi

XLA_DOWNCAST_BF16=1 python predict.py \
  --checkpoint "$CKPT_DIR" \
  --input data/queue.txt \
  --out "$OUT_DIR" "$@"
