#!/bin/bash
# hunt27 queue G: the decoder with its switch deleted alone (nothing else), amp and stochastic
cd "$(dirname "$0")"
N=bench/unseen/hunt27; L=$N/verify_logs; G=$N/greedy_dec/decode.py
m() { JSON=$L/$1.$2.json ./mvrun.sh "$@"; date -u +%T; }
m DW0 amp $G $N/wrong/DW0_switch_deleted.py 12
m DW0 stochastic $G $N/wrong/DW0_switch_deleted.py 12
./repros/against.sh DWA1 amp $G $N/wrong/DWA1_no_autocast.py; date -u +%T
