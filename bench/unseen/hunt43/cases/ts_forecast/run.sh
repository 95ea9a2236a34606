#!/usr/bin/env bash
# nightly forecast job
export PJRT_DEVICE=TPU
export XLA_USE_BF16=1
python forecast.py --lookback 24 --horizon 6 --csv forecast.csv
