#!/bin/bash
# hunt25 queue 3: part B (obs_norm, a running normaliser outside any module) and the CLI --against runs
cd "$(dirname "$0")"
L=bench/unseen/hunt25/verify_logs; S=bench/unseen/hunt25/obs_norm/train_obsnorm.py; W=bench/unseen/hunt25
B=bench/unseen/hunt23
m() { JSON=$L/$1.$2.json ./mvrun.sh "$@"; date -u +%T; }
v() { ./vrun.sh "$@" --json $L/$1.$2.json; date -u +%T; }
m BR1 stochastic $S $W/right/BR1_stoch.py 12
m BW1 stochastic $S $W/wrong/BW1_state_f32.py 12
m BW2 stochastic $S $W/wrong/BW2_update_f32.py 12
m BRA1 amp $S $W/right/BRA1_amp.py 12
m BW3 amp $S $W/wrong/BW3_amp_state_f64.py 12
m BW4 amp $S $W/wrong/BW4_amp_state_bf16.py 12
v obs stochastic $S
./repros/against.sh h23_TC4b stochastic $B/text_f64emb/train_textcls.py $B/wrong/TC4b_gelu_f32_on_R1.py; date -u +%T
./repros/against.sh h23_MTA3 amp $B/ema_teacher/train_mean_teacher.py $B/wrong/MTA3_teacher_bf16.py; date -u +%T
./repros/against.sh h23_MT4 stochastic $B/ema_teacher/train_mean_teacher.py $B/wrong/MT4_ema_f32_island.py; date -u +%T
