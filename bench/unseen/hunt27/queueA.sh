#!/bin/bash
# hunt27 queue A: hunt25's open gaps re-run at the current code
cd "$(dirname "$0")"
B=bench/unseen/hunt23; C=bench/unseen/hunt25; A=bench/unseen/hunt21; L=bench/unseen/hunt27/verify_logs
m() { JSON=$L/$1.$2.json ./mvrun.sh "$@"; date -u +%T; }
m h23_MTA3 amp $B/ema_teacher/train_mean_teacher.py $B/wrong/MTA3_teacher_bf16.py 12
m h25_BW4 amp $C/obs_norm/train_obsnorm.py $C/wrong/BW4_amp_state_bf16.py 12
m h23_MT4 stochastic $B/ema_teacher/train_mean_teacher.py $B/wrong/MT4_ema_f32_island.py 12
m h23_MTA2 amp $B/ema_teacher/train_mean_teacher.py $B/wrong/MTA2_loss_outside_autocast.py 12
./vrun.sh obs stochastic $C/obs_norm/train_obsnorm.py; date -u +%T
m h23_HA2 amp $B/hetero_nll/train_hetero.py $B/wrong/HA2_target_bf16.py 12
