#!/usr/bin/env bash
# fine-tune, then evaluate, a compiled tabular classifier on one TPU host
set -euo pipefail
export PJRT_DEVICE=TPU
XLA_USE_BF16=1 torchrun --standalone --nproc_per_node=1 compiled_cls.py --steps 12 "$@"
