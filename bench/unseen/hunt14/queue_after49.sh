#!/bin/bash
# The lead's re-verification of hunt14's cases after the stop-49 fixes (vrun_main.sh: /work/main's package),
# each under the shared XLA lock; logs verify_logs/after49.*
cd "$(dirname "$0")"
for m in amp stochastic; do ./vrun_main.sh alibi.py-only $m bench/unseen/hunt14/alibi_tied_azure/train_alibi_lm.py --legacy-env XLA_USE_BF16=1 -- --steps 30; done
for m in stochastic amp; do ./vrun_main.sh tta.py-only $m bench/unseen/hunt14/tta_cloudbuild/ensemble_eval.py --legacy-env XLA_USE_BF16=1 -- --members 3; done
for m in stochastic amp; do ./vrun_main.sh repro.r_fp16_noop $m bench/unseen/hunt14/repros/r_fp16_noop.py; done
for m in stochastic amp; do ./vrun_main.sh fp16.variant $m bench/unseen/hunt14/fp16_invoke/variant/train_sae.py -- --steps 40 --out /tmp/h14codes.npy; done
