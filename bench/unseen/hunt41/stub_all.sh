#!/bin/bash
# the stub runs of every case (unmigrated + the three modes), in order -> verify_logs/CASE.MODE.stub.txt
cd "$(dirname "$0")"
export TAILN=12
./stubrun.sh resume_train cases/resume_train 'cp /tmp/h41_legacy_resume.pt /tmp/h41r_run.pt && STEPS=3 python train_resume.py --ckpt /tmp/h41r_run.pt'
./stubrun.sh ckpt_average cases/ckpt_average 'python average.py --ckpt-dir /tmp/h41avg --out /tmp/h41avg/averaged'
./stubrun.sh lr_finder cases/lr_finder 'STEPS=3 python lr_find.py --trials 12'
./stubrun.sh tabular_f64 cases/tabular_f64 'STEPS=4 python churn.py'
./stubrun.sh mp_resume cases/mp_resume 'python train_mp.py --steps 3 --init /tmp/h41mp_init.pt --out /tmp/h41mp_final.pt' --legacy-env XLA_USE_BF16=1
./stubrun.sh pretrain_finetune cases/pretrain_finetune 'STEPS=4 python pretrain_finetune.py'
./stubrun.sh swa_bn cases/swa_bn 'STEPS=6 python swa_train.py'
./stubrun.sh eval_ckpt cases/eval_ckpt 'python evaluate_ckpt.py --ckpt /tmp/h41_eval.pt --metrics /tmp/h41_eval.json'
