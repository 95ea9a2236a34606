#!/bin/bash
set -e
cd "$(dirname "$0")"
source ./env.sh
python train_sinkhorn.py --iters 30 --steps "${STEPS:-60}"
