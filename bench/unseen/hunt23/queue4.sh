#!/bin/bash
# hand-made migrations of the heteroscedastic regression
cd "$(dirname "$0")"
H=bench/unseen/hunt23; T=$H/hetero_nll/train_hetero.py
for spec in "right HR1_y_bf16_at_move stochastic" "right HR2_host_cast stochastic" "wrong H1_inv_f32 stochastic" "wrong H2_eval_sigma_f32 stochastic" \
            "wrong H3_ref_metric_f32 stochastic" "wrong H4_y_f32_ref_only stochastic" "wrong HA1_loss_outside_autocast amp" "wrong HA2_target_bf16 amp"; do
  set -- $spec
  JSON=$H/verify_logs/$2.$3.json ./mvrun.sh $2 $3 $T $H/$1/$2.py 12
done
