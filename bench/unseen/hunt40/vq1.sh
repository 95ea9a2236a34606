#!/bin/bash
# the first device queue (each waits on the lock); output -> verify_logs/*.verify.txt, progress -> verify_logs/vq1.out
cd "$(dirname "$0")"
./vqueue.sh lsq_qat lsq_qat qat.py stochastic
./vqueue.sh meta_sgd meta_sgd meta_sgd.py stochastic
./vqueue.sh ewc_multihead ewc_multihead ewc.py stochastic --legacy-env XLA_USE_BF16=1 -- --tasks 2 --steps 4
./vqueue.sh head_swap_chain head_swap_chain supcon.py stochastic --legacy-env XLA_USE_BF16=1 -- --steps 8
./vqueue.sh kfold_registry kfold_registry cv_train.py stochastic --legacy-env XLA_USE_BF16=1 -- --model resmlp --folds 2 --steps 4
./vqueue.sh gnn_scatter gnn_scatter gat.py stochastic --legacy-env XLA_USE_BF16=1 -- --steps 8
