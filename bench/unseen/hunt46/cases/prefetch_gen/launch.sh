#!/bin/bash
# Single-host launch on the v4-8.
cd "$(dirname "$0")"
env PJRT_DEVICE=TPU XLA_USE_BF16=1 python train_seq.py runs/seq
