#!/bin/sh
# single-host run of the STN baseline
env XLA_USE_BF16=1 PJRT_DEVICE=CPU python train.py --steps 12
