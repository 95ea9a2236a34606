#!/bin/bash
cd "$(dirname "$0")"
./vrun.sh node_rk4 stochastic bench/unseen/hunt17/node_rk4/node_rk4.py --legacy-env XLA_USE_BF16=1
./vrun.sh node_rk4 amp bench/unseen/hunt17/node_rk4/node_rk4.py --legacy-env XLA_USE_BF16=1
