#!/bin/bash
# hunt27 queue E: CA2 on a legacy script whose host exit is .tolist() (the autocast control then cannot crash there); SW2 on the CLI path
cd "$(dirname "$0")"
N=bench/unseen/hunt27; L=$N/verify_logs
m() { JSON=$L/$1.$2.json ./mvrun.sh "$@"; date -u +%T; }
a() { ./repros/against.sh "$@"; date -u +%T; }
m CA2t amp $N/clip_tolist/train_clip.py $N/wrong/CA2t_loss_outside_tolist.py 12
a CA2 amp $N/clip_temp/train_clip.py $N/wrong/CA2_loss_outside.py
a SW2 stochastic $N/swa_custom/train_swa.py $N/wrong/SW2_avg_f32.py
