#!/bin/bash
# device runs, queued on the shared lock (each --steps 6)
cd "$(dirname "$0")"
./vqueue.sh default_device default_device train_cls.py stochastic --legacy-env XLA_USE_BF16=1 -- --steps 6
./vqueue.sh devctx_mlp devctx_mlp train.py stochastic
./vqueue.sh meta_assign meta_assign finetune.py stochastic --legacy-env XLA_USE_BF16=1
./vqueue.sh dtype_config dtype_config train_seq.py amp --legacy-env XLA_USE_BF16=1
./vqueue.sh ode_double ode_double fit_ode.py stochastic --legacy-env XLA_USE_BF16=1
