#!/bin/bash
# hunt27 queue K (the lead): the amp texts whose bf16 loss is computed outside autocast, after BFM206 (the trace
# names where the loss left autocast); labels end in .fix2
cd "$(dirname "$0")"
N=bench/unseen/hunt27; L=$N/verify_logs; B=bench/unseen/hunt23
m() { JSON=$L/$1.$2.json ./mvrun.sh "$@"; date -u +%T; }
m h23_MTA2.fix2 amp $B/ema_teacher/train_mean_teacher.py $B/wrong/MTA2_loss_outside_autocast.py 12
m CA2.fix2 amp $N/clip_temp/train_clip.py $N/wrong/CA2_loss_outside.py 12
m CRA1.fix2 amp $N/clip_temp/train_clip.py $N/right/CRA1_restyled.py 12
