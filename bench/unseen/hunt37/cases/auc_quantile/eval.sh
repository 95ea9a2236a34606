#!/bin/sh
# nightly fraud-model evaluation
cd "$(dirname "$0")" || exit 1
XLA_USE_BF16=1 PJRT_DEVICE="${PJRT_DEVICE:-TPU}" python fraud_eval.py 40
