#!/bin/bash
# single-host DQN smoke run on the TPU VM
set -e
cd "$(dirname "$0")"
env PJRT_DEVICE=TPU python train_dqn.py --steps 12 --tau 0.05 "$@"
