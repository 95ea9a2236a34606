#!/bin/bash
# hunt25 queue 1: the previous false PASS/FAIL texts first, then the codemod's own, then the rest
cd "$(dirname "$0")"
A=bench/unseen/hunt21; B=bench/unseen/hunt23; L=bench/unseen/hunt25/verify_logs
m() { JSON=$L/$1.$2.json ./mvrun.sh "$@"; date -u +%T; }
m h21_A1 amp $A/huber_cum/train_huber.py $A/wrong/A1_amp_w_f64.py 8
m h21_A4 amp $A/contrast_f64tau/train_contrast64.py $A/wrong/A4_amp_f64_param.py 8
m h21_A6 amp $A/huber_cum/train_huber.py $A/wrong/A6_amp_loss_bf16.py 8
m h23_MT4 stochastic $B/ema_teacher/train_mean_teacher.py $B/wrong/MT4_ema_f32_island.py 12
m h23_MT2b stochastic $B/ema_teacher/train_mean_teacher.py $B/wrong/MT2b_xl_f32_explicit.py 12
m h23_TC4b stochastic $B/text_f64emb/train_textcls.py $B/wrong/TC4b_gelu_f32_on_R1.py 12
m h23_MTA3 amp $B/ema_teacher/train_mean_teacher.py $B/wrong/MTA3_teacher_bf16.py 12
m h23_HA2 amp $B/hetero_nll/train_hetero.py $B/wrong/HA2_target_bf16.py 12
m h23_H6 stochastic $B/hetero_nll/train_hetero.py $B/wrong/H6_nll_f32_rewritten.py 12
./repros/against.sh h23_TCR1 stochastic $B/text_f64emb/train_textcls.py $B/right/TCR1_table_f32.py; date -u +%T
