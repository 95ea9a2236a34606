#!/bin/bash
# The device runs of this hunt, one after another (each under the lock, --steps 6).
cd "$(dirname "$0")"
./vqueue.sh base_trainer base_trainer train.py stochastic --legacy-env XLA_USE_BF16=1
./vqueue.sh prefetch_gen prefetch_gen train_seq.py amp --legacy-env XLA_USE_BF16=1
./vqueue.sh registry_jit registry_jit train.py amp --legacy-env XLA_USE_BF16=1
./vqueue.sh grad_reversal grad_reversal dann.py stochastic --legacy-env XLA_USE_BF16=1
./vqueue.sh tied_outputs tied_outputs train_lm.py stochastic
./vqueue.sh func_losses func_losses train_func.py stochastic --legacy-env XLA_DOWNCAST_BF16=1
