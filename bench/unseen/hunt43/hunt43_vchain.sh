#!/bin/bash
# the device runs after vq_all.sh's first three (vq_all.sh was stopped after ddpm_cfg amp to keep the device time
# short; wgan_gp amp was dropped). One chain, each run waiting on /tmp/bfm-xla.lock.
cd "$(dirname "$0")"
date; ./vrepro.sh finfo_eps_clamp stochastic
date; ./vrepro.sh float_literal_prior_amp amp
date; ./vrepro.sh downcast_schedule_dict stochastic
date; ./vqueue.sh dqn_soft dqn_soft dqn.py stochastic --legacy-env XLA_USE_BF16=1
date; ./vqueue.sh anchor_det anchor_det train_det.py stochastic
date; ./vqueue.sh twotower_logq twotower_logq train_retrieval.py gpu-compatible
date
