#!/bin/bash
# hunt27 queue H: clip amp with no autocast at all (training counterpart of DWA1)
cd "$(dirname "$0")"
N=bench/unseen/hunt27; L=$N/verify_logs
JSON=$L/CA4.amp.json ./mvrun.sh CA4 amp $N/clip_temp/train_clip.py $N/wrong/CA4_no_autocast.py 12; date -u +%T
