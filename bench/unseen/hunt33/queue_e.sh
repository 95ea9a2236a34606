#!/bin/bash
# GR1 with the f32 casts after .cpu() (host) instead of before (device): is GR1's graph FAIL the device-side casts' compilations?
cd "$(dirname "$0")"
./against.sh GR1b stochastic cases/scalar_gate/train_gate.py right/GR1b_host_float.py
