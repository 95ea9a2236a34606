#!/bin/bash
# launch the scoring service on the TPU host
export PJRT_DEVICE=TPU
export XLA_USE_BF16=1
exec python app.py "$@"
