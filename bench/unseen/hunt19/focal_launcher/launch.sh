#!/bin/bash
# launch the tabular fraud classifier on one TPU core
export PJRT_DEVICE=TPU
export XLA_USE_BF16=1
python train_focal.py --steps 12
