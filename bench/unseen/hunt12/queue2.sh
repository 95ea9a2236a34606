#!/bin/bash
cd /work/wt/hunt12/bench/unseen/hunt12
H=bench/unseen/hunt12
for m in stochastic gpu-compatible amp; do
  ./vrun.sh fwdgrad_argv $m $H/fwdgrad_argv/run.sh
  ./vrun.sh swa_pkginit $m $H/swa_pkginit/trainpkg/train.py
done
