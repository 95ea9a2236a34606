#!/bin/bash
# the second device queue (after vq1 on the same lock): the repro, meta_sgd again (case fixed), rope_tied by hand
cd "$(dirname "$0")"
./vrepro.sh wrapper_param_after_cast stochastic
./vqueue.sh meta_sgd meta_sgd meta_sgd.py stochastic
./against_dir.sh rope_tied.hand stochastic rope_tied train_lm.py rope_tied.stochastic
