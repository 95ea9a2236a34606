#!/bin/bash
# the whole launch in a bash array
CMD=(torchrun --nproc_per_node 2 train.py --epochs 3)
env XLA_USE_BF16=1 "${CMD[@]}"
