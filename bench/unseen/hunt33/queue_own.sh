#!/bin/bash
# the codemod's own migrations, stochastic + amp, through vrun.sh (hunt_tools)
cd "$(dirname "$0")"
for s in ema_funcall/train_ema.py distill_sd/distill.py scalar_gate/train_gate.py infer_np/predict.py; do
  for m in stochastic amp; do ./vrun.sh "$(basename ${s%.py}).own" $m bench/unseen/hunt33/cases/$s; done
done
