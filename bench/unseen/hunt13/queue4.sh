#!/bin/bash
cd /work/wt/hunt13/bench/unseen/hunt13
for m in stochastic amp gpu-compatible; do
  ./vrun.sh seqdepth_taskfile.py-only $m bench/unseen/hunt13/seqdepth_taskfile/train_intent.py --legacy-env XLA_USE_BF16=1
done
for m in stochastic gpu-compatible; do
  ./vrun.sh parts_ray.py-only $m bench/unseen/hunt13/parts_ray/train_parts.py --legacy-env XLA_USE_BF16=1
done
MODES="stochastic amp" STUBS=1 ./check_points_outputs.sh
