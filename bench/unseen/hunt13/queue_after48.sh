#!/bin/bash
# the cases the lead's fixes changed, verified again with /work/main (stop 48)
cd /work/main/bench/unseen/hunt13
H=bench/unseen/hunt13
./vrun_main.sh seqdepth_taskfile.py-only stochastic $H/seqdepth_taskfile/train_intent.py --legacy-env XLA_USE_BF16=1
./vrun_main.sh hybrid_envrc.py-only stochastic $H/hybrid_envrc/train_ctr.py --legacy-env XLA_USE_BF16=1
./vrun_main.sh swish_conftest.py-only amp $H/swish_conftest/train_swish.py --legacy-env XLA_USE_BF16=1
./vrun_main.sh points_shared_env.variant stochastic $H/points_shared_env/variant/train_points.py --legacy-env XLA_USE_BF16=1
./vrun_main.sh points_shared_env.variant amp $H/points_shared_env/variant/train_points.py --legacy-env XLA_USE_BF16=1
./vrun_main.sh lt_downcast_procfile.py-only stochastic $H/lt_downcast_procfile/train_lt.py --legacy-env XLA_DOWNCAST_BF16=1
