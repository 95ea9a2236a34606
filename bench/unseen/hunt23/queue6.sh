#!/bin/bash
# verify --fix on the codemod's failing hetero migration; the gpu-compatible codemod migration of hetero
cd "$(dirname "$0")"
H=bench/unseen/hunt23
./vrun.sh hn_fix stochastic $H/hetero_nll/train_hetero.py --fix --diff
./vrun.sh hn gpu-compatible $H/hetero_nll/train_hetero.py --json $H/verify_logs/hn.gpu-compatible.json
