#!/bin/bash
# Launch keyword-spotting training on every local TPU core.
#   ./run.sh --steps 2000 --batch-size 128
export XLA_USE_BF16=1
export PJRT_DEVICE=TPU
python train_kws.py "$@"
