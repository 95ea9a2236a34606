#!/bin/bash
# sample from the char model in bf16 on the TPU
set -e
cd "$(dirname "$0")"
XLA_USE_BF16=1 python sample_chars.py --n 64 --temp 0.8
