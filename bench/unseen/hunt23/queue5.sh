#!/bin/bash
# the second wave: islands on lines the hand-made migration rewrote
cd "$(dirname "$0")"
H=bench/unseen/hunt23
for spec in "wrong TC4b_gelu_f32_on_R1 stochastic text_f64emb/train_textcls.py" "wrong H5_eval_f32_rewritten stochastic hetero_nll/train_hetero.py"; do
  set -- $spec
  JSON=$H/verify_logs/$2.$3.json ./mvrun.sh $2 $3 $H/$4 $H/$1/$2.py 12
done
