#!/bin/bash
# the device runs, in the order they ran (each waits on /tmp/bfm-xla.lock)
cd "$(dirname "$0")"
./vqueue.sh probe_unfreeze probe_unfreeze linear_probe.py stochastic --legacy-env XLA_USE_BF16=1
./vqueue.sh prompt_tune prompt_tune prompt_tune.py gpu-compatible --legacy-env XLA_USE_BF16=1
./vqueue.sh prefix_kv prefix_kv train_prefix.py stochastic --legacy-env XLA_USE_BF16=1
./vqueue.sh accum_ckpt accum_ckpt train_accum.py stochastic
./vqueue.sh lowrank_param lowrank_param finetune_sn.py stochastic -- --bf16
./vqueue.sh lora_merge lora_merge finetune_lora.py stochastic
