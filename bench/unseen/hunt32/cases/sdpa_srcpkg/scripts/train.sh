#!/usr/bin/env bash
# Train the POS tagger on one TPU host.
set -e
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
export PJRT_DEVICE=TPU
export XLA_USE_BF16=1
export PYTHONPATH="$ROOT/src${PYTHONPATH:+:$PYTHONPATH}"
python -m ptagger.train --steps 30 "$@"
