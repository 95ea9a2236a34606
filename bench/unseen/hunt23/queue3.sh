#!/bin/bash
# hand-made migrations of the text classifier
cd "$(dirname "$0")"
H=bench/unseen/hunt23; T=$H/text_f64emb/train_textcls.py
for spec in "right TCR1_table_f32 stochastic" "wrong TC2_table_f64 stochastic" "wrong TC3_vecs_host_double stochastic" "wrong TC4_gelu_f32 stochastic" \
            "right TCAR1_table_f32 amp" "wrong TCA2_loss_outside_autocast amp"; do
  set -- $spec
  JSON=$H/verify_logs/$2.$3.json ./mvrun.sh $2 $3 $T $H/$1/$2.py 12
done
