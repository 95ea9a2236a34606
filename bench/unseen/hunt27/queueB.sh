#!/bin/bash
# hunt27 queue B: the codemod's own migrations of the three new scripts, through the CLI (vrun.sh, --steps 12)
cd "$(dirname "$0")"
N=bench/unseen/hunt27
for s in clip_temp/train_clip swa_custom/train_swa policy_gauss/train_pg; do
  for m in stochastic amp; do ./vrun.sh $(basename $s).own $m $N/$s.py --json $N/verify_logs/$(basename $s).own.$m.json; date -u +%T; done
done
