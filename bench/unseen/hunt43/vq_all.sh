#!/bin/bash
# the verify runs, in the order they ran (each waits on /tmp/bfm-xla.lock)
cd "$(dirname "$0")"
date
./vqueue.sh ddpm_cfg ddpm_cfg train_ddpm.py stochastic --legacy-env XLA_DOWNCAST_BF16=1; date
./vqueue.sh mixup_ls mixup_ls train_mix.py stochastic --legacy-env XLA_USE_BF16=1; date
./vqueue.sh ddpm_cfg ddpm_cfg train_ddpm.py amp --legacy-env XLA_DOWNCAST_BF16=1; date
./vqueue.sh dqn_soft dqn_soft dqn.py stochastic --legacy-env XLA_USE_BF16=1; date
./vqueue.sh anchor_det anchor_det train_det.py stochastic; date
./vqueue.sh twotower_logq twotower_logq train_retrieval.py gpu-compatible; date
./vqueue.sh wgan_gp wgan_gp wgan.py amp --legacy-env XLA_USE_BF16=1; date
