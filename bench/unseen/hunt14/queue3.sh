#!/bin/bash
cd /work/wt/hunt14/bench/unseen/hunt14
for m in stochastic amp; do ./vrun.sh fp16.variant $m bench/unseen/hunt14/fp16_invoke/variant/train_sae.py -- --steps 40 --out /tmp/h14codes.npy; done
