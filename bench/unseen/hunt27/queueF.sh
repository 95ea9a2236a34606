#!/bin/bash
# hunt27 queue F: the inference-only greedy decoder (codemod's own + hand texts), and SR2
cd "$(dirname "$0")"
N=bench/unseen/hunt27; L=$N/verify_logs; G=$N/greedy_dec/decode.py
m() { JSON=$L/$1.$2.json ./mvrun.sh "$@"; date -u +%T; }
./vrun.sh decode.own stochastic $G --json $L/decode.own.stochastic.json; date -u +%T
./vrun.sh decode.own amp $G --json $L/decode.own.amp.json; date -u +%T
m DWA1 amp $G $N/wrong/DWA1_no_autocast.py 12
m DW1 stochastic $G $N/wrong/DW1_scores_f32.py 12
m DW2 stochastic $G $N/wrong/DW2_logits_f32.py 12
m DR1 stochastic $G $N/right/DR1_restyled.py 12
m SR2 stochastic $N/swa_custom/train_swa.py $N/right/SR2_f64_moved_then_float.py 12
