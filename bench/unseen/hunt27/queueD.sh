#!/bin/bash
# hunt27 queue D: the CLI CI path (verify train.py --against HEAD) for some texts
cd "$(dirname "$0")"
N=bench/unseen/hunt27
C=$N/clip_temp/train_clip.py; S=$N/swa_custom/train_swa.py; P=$N/policy_gauss/train_pg.py
a() { ./repros/against.sh "$@"; date -u +%T; }
a CR1 stochastic $C $N/right/CR1_restyled.py
a CW1 stochastic $C $N/wrong/CW1_scale_f32.py
a SR1 stochastic $S $N/right/SR1_restyled.py
a CA3 amp $C $N/wrong/CA3_scale_param_bf16.py
