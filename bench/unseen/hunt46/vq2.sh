#!/bin/bash
# Second batch of device runs: the hand-fixed registry_jit amp text, gap 1's repro, the notebook case.
cd "$(dirname "$0")"
./against.sh registry_jit_fixed amp registry_jit train.py registry_jit.fixed.amp.py
./vrepro.sh loss_hook_targets stochastic
./vqueue.sh callbacks_closure callbacks_closure train_callbacks.ipynb stochastic
