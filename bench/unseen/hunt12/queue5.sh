#!/bin/bash
# swa_pkginit again: verify does not see the package __init__'s setting (exit 2 above); with --legacy-env and the
# package's parent on PYTHONPATH (the script imports `trainpkg` absolutely)
cd /work/wt/hunt12/bench/unseen/hunt12
H=bench/unseen/hunt12
for m in stochastic amp; do
  EXTRA_PP=/work/wt/hunt12/$H/swa_pkginit ./vrun.sh swa_pkginit.legacy-env $m $H/swa_pkginit/trainpkg/train.py --legacy-env XLA_USE_BF16=1
done
