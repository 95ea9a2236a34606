#!/bin/sh
# nightly sweep entry
PJRT_DEVICE=TPU XLA_USE_BF16=1 python train_es.py --patience 3 --val-every 5
