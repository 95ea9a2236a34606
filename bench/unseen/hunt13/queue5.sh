#!/bin/bash
# evaluate_avg.py reads ckpt/step*.pt: made once in place by the legacy training run (ckpt/ is ignored by git)
cd /work/wt/hunt13/bench/unseen/hunt13/points_shared_env/variant
flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU XLA_USE_BF16=1 /work/main/.venv/bin/python train_points.py > /dev/null 2>&1
cd /work/wt/hunt13/bench/unseen/hunt13
./lrun.sh points_shared_env.evaluate_avg points_shared_env/variant evaluate_avg.py XLA_USE_BF16=1
for m in stochastic amp; do
  ./vrun.sh points_shared_env.variant.evaluate_avg $m bench/unseen/hunt13/points_shared_env/variant/evaluate_avg.py --legacy-env XLA_USE_BF16=1
done
