#!/bin/bash
# hunt27 queue J (the lead, after its fixes): the codemod's own amp migrations re-run (no false FAIL from the new
# amp checks), and the mean-teacher text of hunt23 (MTA3); labels end in .fix
cd "$(dirname "$0")"
N=bench/unseen/hunt27; L=$N/verify_logs; B=bench/unseen/hunt23
for s in greedy_dec/decode clip_temp/train_clip swa_custom/train_swa policy_gauss/train_pg; do
  ./vrun.sh $(basename $s).own.fix amp $N/$s.py; date -u +%T
done
JSON=$L/h23_MTA3.fix.amp.json ./mvrun.sh h23_MTA3.fix amp $B/ema_teacher/train_mean_teacher.py $B/wrong/MTA3_teacher_bf16.py 12
