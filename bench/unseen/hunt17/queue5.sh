#!/bin/bash
cd "$(dirname "$0")"
while [ "$(wc -l < verify_logs/queue4.out)" -lt 1 ]; do sleep 5; done
./vrun.sh ts_downcast.fix stochastic bench/unseen/hunt17/ts_downcast/forecast.py --legacy-env XLA_DOWNCAST_BF16=1 --fix --diff -- --epochs 2 --bs 32
./vrun.sh node_rk4.fix stochastic bench/unseen/hunt17/node_rk4/node_rk4.py --legacy-env XLA_USE_BF16=1 --fix --diff
