#!/bin/bash
cd "$(dirname "$0")"
while [ "$(wc -l < verify_logs/queue9.out)" -lt 3 ]; do sleep 5; done
./vrun.sh r_explicit_f32_device_tensor stochastic bench/unseen/hunt17/repros/r_explicit_f32_device_tensor.py --steps 3
