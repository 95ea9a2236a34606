#!/bin/bash
cd /work/wt/hunt13/bench/unseen/hunt13
for m in stochastic amp gpu-compatible; do
  ./vrun.sh points_shared_env.variant $m bench/unseen/hunt13/points_shared_env/variant/train_points.py --legacy-env XLA_USE_BF16=1
done
for m in stochastic amp gpu-compatible; do
  ./vrun.sh metric_justfile.py-only $m bench/unseen/hunt13/metric_justfile/keypoints.py --legacy-env XLA_USE_BF16=1
done
