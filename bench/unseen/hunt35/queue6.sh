#!/bin/bash
# the batch_predict hand texts again, the notebook's setting given by hand (verify does not read notebooks)
cd "$(dirname "$0")"
EXTRA="--legacy-env XLA_USE_BF16=1" ./against_case.sh MW1e stochastic cases/batch_predict mig/batch_predict.stochastic wrong/MW1_draws_f32.py batch_predict.py
EXTRA="--legacy-env XLA_USE_BF16=1" ./against_case.sh MR1e stochastic cases/batch_predict mig/batch_predict.stochastic right/MR1_float_on_device.py batch_predict.py
./vrun.sh calibrate.own amp bench/unseen/hunt35/cases/calib_lbfgs/calibrate.py --legacy-env XLA_USE_BF16=1
