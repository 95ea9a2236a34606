#!/bin/bash
# hunt27 queue I (the lead, after its fixes: BFM205, matches vs the autocast control, a control failed after its
# steps): the amp false PASSes re-run, and the right amp texts as controls; labels end in .fix
cd "$(dirname "$0")"
N=bench/unseen/hunt27; L=$N/verify_logs; B=bench/unseen/hunt23; H=bench/unseen/hunt25
C=$N/clip_temp/train_clip.py; S=$N/swa_custom/train_swa.py; P=$N/policy_gauss/train_pg.py; D=$N/greedy_dec/decode.py
m() { JSON=$L/$1.$2.json ./mvrun.sh "$@"; date -u +%T; }
m CA2.fix amp $C $N/wrong/CA2_loss_outside.py 12
m DWA1.fix amp $D $N/wrong/DWA1_no_autocast.py 12
m DW0.fix amp $D $N/wrong/DW0_switch_deleted.py 12
m CA1.fix amp $C $N/wrong/CA1_pos_bf16.py 12
m SWA1.fix amp $S $N/wrong/SWA1_avg_bf16.py 12
m PA1.fix amp $P $N/wrong/PA1_ret_bf16.py 12
m CRA1.fix amp $C $N/right/CRA1_restyled.py 12
m h23_HA2.fix amp $B/hetero_nll/train_hetero.py $B/wrong/HA2_target_bf16.py 12
m h25_BW4.fix amp $H/obs_norm/train_obsnorm.py $H/wrong/BW4_amp_state_bf16.py 12
m SWA2.fix amp $S $N/wrong/SWA2_state_bf16.py 12
