#!/bin/bash
# DOWNCAST texts on a base whose accumulator is bf16 as the legacy had it (CR1b); the codemod's gate text with a bf16 accumulator (GR2)
cd "$(dirname "$0")"
./against.sh CR1b stochastic cases/downcast_f64/train_dc.py right/CR1b_acc_bf16.py
./against.sh CW1b stochastic cases/downcast_f64/train_dc.py wrong/CW1b_target_bf16.py
./against.sh CW2b stochastic cases/downcast_f64/train_dc.py wrong/CW2b_scale_bf16.py
./against.sh GR2 stochastic cases/scalar_gate/train_gate.py right/GR2_codemod_acc_bf16.py
