#!/bin/bash
cd "$(dirname "$0")"; P=bench/unseen/hunt35/cases; A=./against_case.sh
$A RR2 stochastic cases/retrieval_index mig/retrieval_index.stochastic right/RR2_dtype_at_move_hit_bf16.py build_index.py
$A BR2 stochastic cases/balanced_smooth mig/balanced_smooth.stochastic right/BR2_counts_bf16_on_host.py train_balanced.py
./vrun.sh train_balanced.own stochastic $P/balanced_smooth/train_balanced.py
./vrun.sh train_balanced.own amp $P/balanced_smooth/train_balanced.py
