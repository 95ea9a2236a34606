#!/bin/bash
# prompt tuning job
set -e
export PJRT_DEVICE=${PJRT_DEVICE:-TPU}
export XLA_USE_BF16=1
python prompt_tune.py "$@"
