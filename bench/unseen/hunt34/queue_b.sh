#!/bin/bash
cd "$(dirname "$0")"
while pgrep -f queue_a.sh >/dev/null; do sleep 5; done
./vrun.sh ppo_nofloat stochastic bench/unseen/hunt34/cases/ppo_nofloat/ppo.py
./vrun.sh hook_feats stochastic bench/unseen/hunt34/cases/hook_feats/train_probe.py --timeout 120
