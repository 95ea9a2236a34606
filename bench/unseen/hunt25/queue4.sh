#!/bin/bash
# hunt25 queue 4: hunt23's remaining texts (the old codemod texts as hand-made ones, then the wrong ones)
cd "$(dirname "$0")"
A=bench/unseen/hunt21; B=bench/unseen/hunt23; L=bench/unseen/hunt25/verify_logs
m() { JSON=$L/$1.$2.json ./mvrun.sh "$@"; date -u +%T; }
m h23_oldtc_amp amp $B/text_f64emb/train_textcls.py $B/text_f64emb/train_textcls.amp.mig.py 12
m h23_oldhn_stoch stochastic $B/hetero_nll/train_hetero.py $B/hetero_nll/train_hetero.stochastic.mig.py 12
m h23_TC2 stochastic $B/text_f64emb/train_textcls.py $B/wrong/TC2_table_f64.py 12
m h23_MTA2 amp $B/ema_teacher/train_mean_teacher.py $B/wrong/MTA2_loss_outside_autocast.py 12
m h23_TCA2 amp $B/text_f64emb/train_textcls.py $B/wrong/TCA2_loss_outside_autocast.py 12
m h23_MT1 stochastic $B/ema_teacher/train_mean_teacher.py $B/wrong/MT1_teacher_f32_hooks.py 12
m h23_TC4 stochastic $B/text_f64emb/train_textcls.py $B/wrong/TC4_gelu_f32.py 12
m h23_MTA1 amp $B/ema_teacher/train_mean_teacher.py $B/wrong/MTA1_teacher_outside_autocast.py 12
m h23_MTG1 gpu-compatible $B/ema_teacher/train_mean_teacher.py $B/wrong/MTG1_no_master.py 12
m h23_MT2 stochastic $B/ema_teacher/train_mean_teacher.py $B/wrong/MT2_xl_f32.py 12
m h23_MT3 stochastic $B/ema_teacher/train_mean_teacher.py $B/wrong/MT3_cons_float.py 12
m h23_MT5 stochastic $B/ema_teacher/train_mean_teacher.py $B/wrong/MT5_probs_bf16_numpy.py 12
m h23_H1 stochastic $B/hetero_nll/train_hetero.py $B/wrong/H1_inv_f32.py 12
m h23_H2 stochastic $B/hetero_nll/train_hetero.py $B/wrong/H2_eval_sigma_f32.py 12
m h23_H3 stochastic $B/hetero_nll/train_hetero.py $B/wrong/H3_ref_metric_f32.py 12
m h23_H4 stochastic $B/hetero_nll/train_hetero.py $B/wrong/H4_y_f32_ref_only.py 12
m h23_H5 stochastic $B/hetero_nll/train_hetero.py $B/wrong/H5_eval_f32_rewritten.py 12
m h21_A5 amp $A/contrast_bank/train_contrast.py $A/wrong/A5_amp_forward_only.py 8
m h21_H1 stochastic $A/huber_cum/train_huber.py $A/wrong/H1_w_f64.py 8
m h21_C5 stochastic $A/contrast_bank/train_contrast.py $A/wrong/C5_tau_f32.py 8
m h21_H3 stochastic $A/huber_cum/train_huber.py $A/wrong/H3_cumprod_f32.py 8
m h21_C1 stochastic $A/contrast_bank/train_contrast.py $A/wrong/C1_zeros_f32.py 8
m h21_C2 stochastic $A/contrast_bank/train_contrast.py $A/wrong/C2_logits_float.py 8
m h21_C3 stochastic $A/contrast_bank/train_contrast.py $A/wrong/C3_host_bf16.py 8
m h21_H4 stochastic $A/huber_cum/train_huber.py $A/wrong/H4_host_bf16_promoted.py 8
