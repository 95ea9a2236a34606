#!/bin/bash
# the legacy runs of every case (switch as its carrier sets it; launchers' switches given as env)
cd "$(dirname "$0")"
./lrun.sh hook_feats cases/hook_feats train_probe.py
./lrun.sh xbm_bank cases/xbm_bank train_xbm.py XLA_USE_BF16=1
./lrun.sh ppo_orth cases/ppo_orth ppo.py
./lrun.sh ste_quant cases/ste_quant qat.py
./lrun.sh welford_norm cases/welford_norm value_fit.py
./lrun.sh dtype_cfg cases/dtype_cfg train_rnn.py XLA_USE_BF16=1
./lrun.sh sam_trainer cases/sam_trainer train_sam.py
