#!/bin/bash
cd /work/wt/hunt14/bench/unseen/hunt14
for m in stochastic amp gpu-compatible; do ./vrun.sh tta.py-only $m bench/unseen/hunt14/tta_cloudbuild/ensemble_eval.py --legacy-env XLA_USE_BF16=1 -- --members 3; done
./vrun.sh repro.r_fp16_noop stochastic bench/unseen/hunt14/repros/r_fp16_noop.py
