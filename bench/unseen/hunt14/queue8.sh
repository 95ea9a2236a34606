#!/bin/bash
cd /work/wt/hunt14/bench/unseen/hunt14
for m in stochastic amp; do ./vrun.sh alibi.variant $m bench/unseen/hunt14/alibi_tied_azure/variant/train_alibi_lm.py --legacy-env XLA_USE_BF16=1 -- --steps 30; done
./vrun.sh repro.r_fp16_noop amp bench/unseen/hunt14/repros/r_fp16_noop.py
