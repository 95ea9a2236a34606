#!/bin/bash
# Device run, batch 5: welford_norm in amp (gap 3 in evaluation code, after the recorded steps).
cd "$(dirname "$0")"
./vqueue.sh welford_norm welford_norm train_norm.py amp
