#!/bin/bash
# The last re-verifications of stop 49 (after the model-code data arrivals and the reference's class weights):
# the alibi variant in stochastic and amp, accum amp again; logs verify_logs/after49.*
cd "$(dirname "$0")"
for m in stochastic amp; do ./vrun_main.sh alibi.variant $m bench/unseen/hunt14/alibi_tied_azure/variant/train_alibi_lm.py --legacy-env XLA_USE_BF16=1 -- --steps 30; done
./vrun_main.sh accum.py-only.final amp bench/unseen/hunt14/accum_seta_envfile/train_imbalanced.py --legacy-env XLA_USE_BF16=1 -- --steps 24 --accum 4
