#!/bin/bash
# 5-fold CV on one TPU host
export PJRT_DEVICE=TPU
export XLA_USE_BF16=1
python kfold.py --folds ${FOLDS:-3}
