#!/bin/bash
cd /work/wt/hunt13/bench/unseen/hunt13
./lrun.sh seqdepth_taskfile seqdepth_taskfile train_intent.py XLA_USE_BF16=1
for m in stochastic amp gpu-compatible; do
  ./vrun.sh seqdepth_taskfile.py-only $m bench/unseen/hunt13/seqdepth_taskfile/train_intent.py --legacy-env XLA_USE_BF16=1
done
for m in stochastic amp gpu-compatible; do
  ./vrun.sh lt_downcast_procfile.py-only $m bench/unseen/hunt13/lt_downcast_procfile/train_lt.py --legacy-env XLA_DOWNCAST_BF16=1
done
for m in stochastic amp; do
  ./vrun.sh hybrid_envrc.py-only $m bench/unseen/hunt13/hybrid_envrc/train_ctr.py --legacy-env XLA_USE_BF16=1
done
