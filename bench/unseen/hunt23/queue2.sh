#!/bin/bash
# hand-made migrations of the mean-teacher script
cd "$(dirname "$0")"
H=bench/unseen/hunt23; T=$H/ema_teacher/train_mean_teacher.py
for spec in "MT1_teacher_f32_hooks stochastic" "MT2_xl_f32 stochastic" "MT3_cons_float stochastic" "MT4_ema_f32_island stochastic" \
            "MT5_probs_bf16_numpy stochastic" "MTA1_teacher_outside_autocast amp" "MTA2_loss_outside_autocast amp" "MTA3_teacher_bf16 amp" \
            "MTG1_no_master gpu-compatible" "MTG2_cast_after_opt gpu-compatible"; do
  set -- $spec
  JSON=$H/verify_logs/$1.$2.json ./mvrun.sh $1 $2 $T $H/wrong/$1.py 12
done
