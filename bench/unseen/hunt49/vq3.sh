#!/bin/bash
# third batch: is seg_unet's graph FAIL the cast's pending converts? (hand text: the model cast on the host before its move)
cd "$(dirname "$0")"
VOPTS="--legacy-env XLA_USE_BF16=1" ./against.sh seg_unet_hostcast stochastic seg_unet train_unet.py seg_unet.cast_on_host.stochastic.py
