#!/bin/bash
# single-host DQN smoke run on the TPU VM
set -e
cd "$(dirname "$0")"
env NEURON_RT_STOCHASTIC_ROUNDING_EN=1 PJRT_DEVICE=TPU python train_dqn.py --steps 12 --tau 0.05 "$@"
