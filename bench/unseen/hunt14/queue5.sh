#!/bin/bash
cd /work/wt/hunt14/bench/unseen/hunt14
for m in stochastic amp; do ./vrun.sh tta.variant $m bench/unseen/hunt14/tta_cloudbuild/variant/ensemble_eval.py --legacy-env XLA_USE_BF16=1 -- --members 3; done
