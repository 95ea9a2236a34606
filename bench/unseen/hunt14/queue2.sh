#!/bin/bash
cd /work/wt/hunt14/bench/unseen/hunt14
for m in stochastic gpu-compatible amp; do ./vrun.sh kfold.py-only $m bench/unseen/hunt14/kfold_downcast_actions/kfold_reg.py --legacy-env XLA_DOWNCAST_BF16=1 -- --folds 5 --epochs 3; done
for m in stochastic gpu-compatible amp; do ./vrun.sh dtype_branch.py-only $m bench/unseen/hunt14/dtype_branch_devcontainer/train_tagger.py --legacy-env XLA_USE_BF16=1 -- --steps 30; done
