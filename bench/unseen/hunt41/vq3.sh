#!/bin/bash
# device queue 3 (after vq1; each waits on the lock): resume_train with the host-loading text, gap 7's device probe,
# the hand-fixed texts of gaps 2-4 (vq2 was stopped: against.sh was edited under it)
cd "$(dirname "$0")"
./vresume.sh stochastic
./probe_f64_hook.sh
./vrepro.sh downcast_f64_input_hook stochastic
PRE="cp /tmp/h41_legacy_resume.pt resume.pt" VARGS="--steps 3 -- --ckpt resume.pt --steps 6" ./against.sh resume_train.fixed stochastic resume_train train_resume.py resume_train.fixed.stochastic.py
VARGS="-- --trials 10 --steps 8" ./against.sh lr_finder.fixed stochastic lr_finder lr_find.py lr_finder.fixed.stochastic.py
VARGS="-- --ckpt-dir avg --out avg/averaged" ./against.sh ckpt_average.fixed stochastic ckpt_average average.py ckpt_average.fixed.stochastic.py
