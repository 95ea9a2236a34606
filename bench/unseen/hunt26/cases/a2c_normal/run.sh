#!/usr/bin/env bash
# Continuous-control A2C on the reach task, one process per host.
set -euo pipefail
cd "$(dirname "$0")"

export PJRT_DEVICE=${PJRT_DEVICE:-TPU}
export XLA_DOWNCAST_BF16=1
export OMP_NUM_THREADS=4

SEEDS=${SEEDS:-"0 1"}
for seed in $SEEDS; do
  torchrun --nproc_per_node=1 --standalone a2c_reach.py --seed "$seed" --updates "${UPDATES:-200}" --out "runs/seed$seed"
done
