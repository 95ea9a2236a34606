#!/usr/bin/env bash
# sample a few continuations from the smoke model on one host
set -euo pipefail
cd "$(dirname "$0")"
XLA_DOWNCAST_BF16=1 torchrun --standalone --nproc_per_node=1 generate.py --samples 4 --max-new 12 "$@"
