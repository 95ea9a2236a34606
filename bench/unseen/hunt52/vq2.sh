#!/bin/bash
# hand-fixed texts, after vq1.sh (each waits on /tmp/bfm-xla.lock)
cd "$(dirname "$0")"
./vhand.sh probe_unfreeze.fixed.stochastic probe_unfreeze linear_probe.py stochastic --legacy-env XLA_USE_BF16=1
./vhand.sh lora_merge.fixed.stochastic lora_merge finetune_lora.py stochastic
