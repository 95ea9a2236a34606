#!/bin/bash
# hunt27 queue C: hand-made texts of the three new scripts through verify_script (mvrun.sh, 12 steps), some through --against
cd "$(dirname "$0")"
N=bench/unseen/hunt27; L=$N/verify_logs
C=$N/clip_temp/train_clip.py; S=$N/swa_custom/train_swa.py; P=$N/policy_gauss/train_pg.py
m() { JSON=$L/$1.$2.json ./mvrun.sh "$@"; date -u +%T; }
a() { ./repros/against.sh "$@"; date -u +%T; }
m CW1 stochastic $C $N/wrong/CW1_scale_f32.py 12
m CR1 stochastic $C $N/right/CR1_restyled.py 12
m CA3 amp $C $N/wrong/CA3_scale_param_bf16.py 12
m CA1 amp $C $N/wrong/CA1_pos_bf16.py 12
m SW1 stochastic $S $N/wrong/SW1_wts_f64.py 12
m SW3 stochastic $S $N/wrong/SW3_state_f32.py 12
m SR1 stochastic $S $N/right/SR1_restyled.py 12
m SWA2 amp $S $N/wrong/SWA2_state_bf16.py 12
m PW1 stochastic $P $N/wrong/PW1_ret_f32.py 12
m PR1 stochastic $P $N/right/PR1_restyled.py 12
m PA1 amp $P $N/wrong/PA1_ret_bf16.py 12
m CW2 stochastic $C $N/wrong/CW2_pos_f32.py 12
m CW3 stochastic $C $N/wrong/CW3_ckpt_bf16.py 12
m CA2 amp $C $N/wrong/CA2_loss_outside.py 12
m CRA1 amp $C $N/right/CRA1_restyled.py 12
m SW2 stochastic $S $N/wrong/SW2_avg_f32.py 12
m SWA1 amp $S $N/wrong/SWA1_avg_bf16.py 12
m PW3 stochastic $P $N/wrong/PW3_logstd_f32.py 12
m PW2 stochastic $P $N/wrong/PW2_sample_host_bf16.py 12
