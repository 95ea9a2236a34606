#!/bin/bash
cd /work/wt/hunt14/bench/unseen/hunt14
for m in amp stochastic gpu-compatible; do ./vrun.sh alibi.py-only $m bench/unseen/hunt14/alibi_tied_azure/train_alibi_lm.py --legacy-env XLA_USE_BF16=1 -- --steps 30; done
for m in stochastic; do ./vrun.sh vmap.py-only $m bench/unseen/hunt14/vmap_ensemble_hatch/train_ensemble.py --legacy-env XLA_USE_BF16=1 -- --members 4 --steps 30; done
