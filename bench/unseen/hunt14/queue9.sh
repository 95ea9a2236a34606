#!/bin/bash
cd /work/wt/hunt14/bench/unseen/hunt14
./vrun.sh alibi.variant gpu-compatible bench/unseen/hunt14/alibi_tied_azure/variant/train_alibi_lm.py --legacy-env XLA_USE_BF16=1 -- --steps 30
./vrun.sh tta.variant gpu-compatible bench/unseen/hunt14/tta_cloudbuild/variant/ensemble_eval.py --legacy-env XLA_USE_BF16=1 -- --members 3
