#!/bin/bash
cd "$(dirname "$0")"
H=bench/unseen/hunt23
JSON=$H/verify_logs/H6_nll_f32_rewritten.stochastic.json ./mvrun.sh H6_nll_f32_rewritten stochastic $H/hetero_nll/train_hetero.py $H/wrong/H6_nll_f32_rewritten.py 12
