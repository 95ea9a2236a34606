#!/bin/bash
cd /work/wt/hunt14/bench/unseen/hunt14
./vrun.sh accum.launcher stochastic bench/unseen/hunt14/accum_seta_envfile/train.sh
for m in amp stochastic gpu-compatible; do ./vrun.sh accum.py-only $m bench/unseen/hunt14/accum_seta_envfile/train_imbalanced.py --legacy-env XLA_USE_BF16=1 -- --steps 24 --accum 4; done
