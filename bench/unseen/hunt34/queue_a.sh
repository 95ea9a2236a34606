#!/bin/bash
# device verifies, one at a time (each vrun.sh takes /tmp/bfm-xla.lock)
cd "$(dirname "$0")"
./vrun.sh ppo_orth stochastic bench/unseen/hunt34/cases/ppo_orth/ppo.py
./vrun.sh sam_trainer gpu-compatible bench/unseen/hunt34/cases/sam_trainer/train_sam.py
./vrun.sh ste_mask stochastic bench/unseen/hunt34/cases/ste_mask/qat.py
./vrun.sh dtype_script stochastic bench/unseen/hunt34/scriptonly/dtype/train_rnn.py --legacy-env XLA_USE_BF16=1
./vrun.sh welford_norm stochastic bench/unseen/hunt34/cases/welford_norm/value_fit.py
./vrun.sh sam_trainer stochastic bench/unseen/hunt34/cases/sam_trainer/train_sam.py
./vrun.sh xbm_script stochastic bench/unseen/hunt34/scriptonly/xbm/train_xbm.py --legacy-env XLA_USE_BF16=1
./vrun.sh hook_plain stochastic bench/unseen/hunt34/cases/hook_plain/train_probe.py
./vrun.sh ste_quant amp bench/unseen/hunt34/cases/ste_quant/qat.py
./vrun.sh ppo_orth amp bench/unseen/hunt34/cases/ppo_orth/ppo.py
