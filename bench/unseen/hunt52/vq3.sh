#!/bin/bash
# device-runnable variants of the two checkpointing cases (torch.utils.checkpoint's non-reentrant path raises
# `module 'torch' has no attribute 'xla'` on the XLA device, legacy run included), and probe_unfreeze in amp
cd "$(dirname "$0")"
./vqueue.sh probe.lowrank_param_reentrant probes/lowrank_param_reentrant finetune_sn.py stochastic -- --bf16
./vqueue.sh probe_unfreeze probe_unfreeze linear_probe.py amp --legacy-env XLA_USE_BF16=1
./vqueue.sh probe.accum_ckpt_xla probes/accum_ckpt_xla train_accum.py stochastic
