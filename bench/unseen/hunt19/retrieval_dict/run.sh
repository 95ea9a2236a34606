#!/bin/bash
set -e
export PJRT_DEVICE=TPU
XLA_DOWNCAST_BF16=1 python train_retrieval.py --epochs 2 "$@"
