#!/bin/bash
cd "$(dirname "$0")"
while [ "$(wc -l < verify_logs/queue10.out)" -lt 1 ]; do sleep 5; done
./vrun.sh moe_topk gpu-compatible bench/unseen/hunt17/moe_topk/moe_topk.py
./vrun.sh ts_downcast gpu-compatible bench/unseen/hunt17/ts_downcast/forecast.py --legacy-env XLA_DOWNCAST_BF16=1 -- --epochs 2 --bs 32
