#!/bin/bash
# 8-mode ring, WGAN-GP; samples end up in out/samples.pgm
set -euo pipefail
mkdir -p out
env PJRT_DEVICE=TPU XLA_USE_BF16=1 python wgan.py --n-critic 5 --out out "$@"
