#!/bin/bash
# the verify runs, in the order they ran (each under the XLA lock through vrun.sh)
cd /work/wt/hunt12/bench/unseen/hunt12
H=bench/unseen/hunt12
for m in stochastic gpu-compatible amp; do
  ./vrun.sh es_runpy.py-only $m $H/es_runpy/es_train.py --legacy-env XLA_USE_BF16=1
done
