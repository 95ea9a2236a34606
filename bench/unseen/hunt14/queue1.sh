#!/bin/bash
cd /work/wt/hunt14/bench/unseen/hunt14
for m in stochastic gpu-compatible amp; do ./vrun.sh lora_nox.py-only $m bench/unseen/hunt14/lora_nox/finetune_lora.py --legacy-env XLA_USE_BF16=1 -- --steps 30; done
