#!/bin/bash
# hunt25 queue 2 (after queue 1): the codemod's own migrations of hunt23, the right texts, then the rest
cd "$(dirname "$0")"
while pgrep -f "hunt25/queue1.sh" >/dev/null; do sleep 5; done
A=bench/unseen/hunt21; B=bench/unseen/hunt23; L=bench/unseen/hunt25/verify_logs
m() { JSON=$L/$1.$2.json ./mvrun.sh "$@"; date -u +%T; }
v() { ./vrun.sh "$@" --json $L/$1.$2.json; date -u +%T; }
v et stochastic $B/ema_teacher/train_mean_teacher.py
v et amp $B/ema_teacher/train_mean_teacher.py
v tc stochastic $B/text_f64emb/train_textcls.py
v tc amp $B/text_f64emb/train_textcls.py
v hn stochastic $B/hetero_nll/train_hetero.py
v hn amp $B/hetero_nll/train_hetero.py
# right texts (could turn into a false FAIL now that hand-made texts get no excuse)
m h23_TCR1 stochastic $B/text_f64emb/train_textcls.py $B/right/TCR1_table_f32.py 12
m h23_HR1 stochastic $B/hetero_nll/train_hetero.py $B/right/HR1_y_bf16_at_move.py 12
m h23_HR2 stochastic $B/hetero_nll/train_hetero.py $B/right/HR2_host_cast.py 12
m h23_TCAR1 amp $B/text_f64emb/train_textcls.py $B/right/TCAR1_table_f32.py 12
m h21_R1 stochastic $A/contrast_bank/train_contrast.py $A/right/R1_cast_on_host.py 8
m h21_H2 stochastic $A/huber_cum/train_huber.py $A/wrong/H2_cast_after_opt.py 8
m h23_MTG2 gpu-compatible $B/ema_teacher/train_mean_teacher.py $B/wrong/MTG2_cast_after_opt.py 12
m h23_TC3 stochastic $B/text_f64emb/train_textcls.py $B/wrong/TC3_vecs_host_double.py 12
m h23_HA1 amp $B/hetero_nll/train_hetero.py $B/wrong/HA1_loss_outside_autocast.py 12
