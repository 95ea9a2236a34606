#!/usr/bin/env bash
# conditional WGAN-GP on the 2-D ring; one process per host
set -e
export PJRT_DEVICE=${PJRT_DEVICE:-CPU}
export XLA_DOWNCAST_BF16=1
torchrun --nnodes=1 --nproc_per_node=1 train_cgan.py --iters 10 --critic 2 "$@"
