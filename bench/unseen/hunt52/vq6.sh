#!/bin/bash
# the hand-fixed gpu-compatible probe_unfreeze, with the unfreeze (add_param_group) inside the 6 verified steps
cd "$(dirname "$0")"
UNFREEZE_AT=3 ./vhand.sh probe_unfreeze.fixed.gpu-compatible probe_unfreeze linear_probe.py gpu-compatible --legacy-env XLA_USE_BF16=1
