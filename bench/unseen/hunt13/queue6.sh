#!/bin/bash
cd /work/wt/hunt13/bench/unseen/hunt13
./lrun.sh swish_conftest swish_conftest train_swish.py XLA_USE_BF16=1
for m in stochastic amp gpu-compatible; do
  ./vrun.sh swish_conftest.py-only $m bench/unseen/hunt13/swish_conftest/train_swish.py --legacy-env XLA_USE_BF16=1
done
