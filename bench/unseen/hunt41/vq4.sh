#!/bin/bash
# device queue 4: other modes (resume from a legacy checkpoint into FP32 master weights; DOWNCAST float64 in amp)
cd "$(dirname "$0")"
./vresume.sh gpu-compatible
./vqueue.sh tabular_f64 tabular_f64 churn.py amp --legacy-env XLA_DOWNCAST_BF16=1
./vresume.sh amp
