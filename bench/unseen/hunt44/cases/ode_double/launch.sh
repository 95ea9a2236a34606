#!/bin/bash
# fit on one TPU core
cd "$(dirname "$0")"
env PJRT_DEVICE=TPU XLA_USE_BF16=1 python fit_ode.py "$@"
