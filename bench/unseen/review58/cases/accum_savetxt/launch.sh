#!/bin/bash
# legacy launcher
XLA_USE_BF16=1 PJRT_DEVICE=TPU python train.py --accum 2 "$@"
