#!/bin/bash
# device queue 2: the codemod's texts with the one line each gap names fixed by hand (hand/*.fixed.stochastic.py)
cd "$(dirname "$0")"
./against.sh tabular_f64.fixed stochastic tabular_f64 churn.py tabular_f64.fixed.stochastic.py
VARGS="-- --trials 10 --steps 8" ./against.sh lr_finder.fixed stochastic lr_finder lr_find.py lr_finder.fixed.stochastic.py
VARGS="-- --ckpt-dir avg --out avg/averaged" ./against.sh ckpt_average.fixed stochastic ckpt_average average.py ckpt_average.fixed.stochastic.py
PRE="cp /tmp/h41_legacy_resume.pt resume.pt" VARGS="--steps 3 -- --ckpt resume.pt --steps 6" ./against.sh resume_train.fixed stochastic resume_train train_resume.py resume_train.fixed.stochastic.py
