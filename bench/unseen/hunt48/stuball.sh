#!/bin/bash
# runs every case unmigrated and in the three modes under the stub (STEPS as below) -> verify_logs/CASE.MODE.stub.txt
cd "$(dirname "$0")"
export TAILN=8
STEPS=4 ./stubrun.sh confusion_ece cases/confusion_ece 'python eval_calib.py'
STEPS=4 ./stubrun.sh beam_lenpen cases/beam_lenpen 'python train_lm.py'
STEPS=4 ./stubrun.sh tta_window cases/tta_window 'python train_seg.py --out /tmp/hunt48_seg.npz'
STEPS=4 ./stubrun.sh export_trace cases/export_trace 'python train_export.py --out /tmp/hunt48_export'
STEPS=12 ./stubrun.sh plateau_es cases/plateau_es 'bash run.sh --patience 0 --val-every 2'
STEPS=3 ./stubrun.sh kfold_cv cases/kfold_cv 'bash cv.sh'
