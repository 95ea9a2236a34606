#!/bin/bash
# rejudge55 device queue: every verify under /tmp/bfm-xla.lock (taken inside each script), one at a time
cd "$(dirname "$0")"; U=bench/unseen
./vrun.sh ste_mask stochastic $U/hunt34/cases/ste_mask/qat.py
./vrun.sh ppo_orth stochastic $U/hunt34/cases/ppo_orth/ppo.py
./vrun.sh welford_norm stochastic $U/hunt34/cases/welford_norm/value_fit.py
./vrun.sh ppo_nofloat stochastic $U/hunt34/cases/ppo_nofloat/ppo.py
./vrun.sh calibrate.own stochastic $U/hunt35/cases/calib_lbfgs/calibrate.py --legacy-env XLA_USE_BF16=1
./vrun.sh train_dqn.own stochastic $U/hunt35/cases/rl_polyak/train_dqn.py --legacy-env XLA_USE_BF16=1
./check.docstring_mention.sh > verify_logs/check.docstring_mention.out 2>&1
./check.notebook_bang_python.sh > verify_logs/check.notebook_bang_python.out 2>&1
./run_against.sh exit_spelling predict.py predict.right.py > verify_logs/run_against.exit_spelling.out 2>&1
./against_case.sh ER1 stochastic cases/eval_host_metrics mig/eval_host_metrics.stochastic right/ER1_tolist_exit.py evaluate.py
./vrun.sh cbs stochastic $U/hunt36/cases/callbacks_npy/train.py
./vrun.sh inj gpu-compatible $U/hunt36/cases/trainer_injected/train.py
./vrun.sh repro.injected_trainer_target stochastic $U/hunt36/repros/injected_trainer_target/repro.py --steps 3
./vrun.sh repro.dtype_attr_zeros stochastic $U/hunt34/repros/dtype_attr_zeros/repro.py --steps 1
./vrun.sh calibrate.own amp $U/hunt35/cases/calib_lbfgs/calibrate.py --legacy-env XLA_USE_BF16=1
./vrun.sh sam_trainer gpu-compatible $U/hunt34/cases/sam_trainer/train_sam.py
echo QUEUE-DONE
