#!/bin/bash
cd /work/wt/hunt13/bench/unseen/hunt13
for m in stochastic gpu-compatible amp; do
  ./vrun.sh grl_pytest_ini.py-only $m bench/unseen/hunt13/grl_pytest_ini/train_dann.py --legacy-env XLA_USE_BF16=1
done
