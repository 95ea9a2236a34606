#!/bin/bash
cd "$(dirname "$0")"
./vrun.sh ts_downcast stochastic bench/unseen/hunt17/ts_downcast/forecast.py --legacy-env XLA_DOWNCAST_BF16=1 -- --epochs 2 --bs 32
./vrun.sh moe_topk stochastic bench/unseen/hunt17/moe_topk/moe_topk.py
./vrun.sh ts_downcast amp bench/unseen/hunt17/ts_downcast/forecast.py --legacy-env XLA_DOWNCAST_BF16=1 -- --epochs 2 --bs 32
./vrun.sh moe_topk amp bench/unseen/hunt17/moe_topk/moe_topk.py
