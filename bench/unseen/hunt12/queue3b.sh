#!/bin/bash
# queue3 was stopped after its first legacy run (lbfgs: 20 s per L-BFGS iteration, the lock shared); the rest, with lbfgs verified on 3+3 iterations
cd /work/wt/hunt12/bench/unseen/hunt12
H=bench/unseen/hunt12
./lrun.sh knn_setenv_nb knn_setenv_nb/export retrieval_eval.py XLA_USE_BF16=1
./lrun.sh orth_rnn_cfgdc orth_rnn_cfgdc orth_rnn.py
./lrun.sh probe_importlib probe_importlib run_probe.py
./lrun.sh mezo_jenkins mezo_jenkins mezo_finetune.py XLA_USE_BF16=1 -- --steps 24 --out out
for m in stochastic gpu-compatible amp; do
  ./vrun.sh probe_importlib.main_variant $m $H/probe_importlib/main_variant/activation_probe.py --legacy-env XLA_USE_BF16=1
  ./vrun.sh mezo_jenkins.py-only $m $H/mezo_jenkins/mezo_finetune.py --legacy-env XLA_USE_BF16=1
  ./vrun.sh orth_rnn_cfgdc.launcher_variant $m $H/orth_rnn_cfgdc/launcher_variant/orth_rnn.py --legacy-env XLA_USE_BF16=1
  ./vrun.sh knn_setenv_nb.export $m $H/knn_setenv_nb/export/retrieval_eval.py --legacy-env XLA_USE_BF16=1
done
for m in stochastic amp; do
  ./vrun.sh lbfgs_skypilot.py-only $m $H/lbfgs_skypilot/lbfgs_fit.py --legacy-env XLA_USE_BF16=1 -- --phase1 3 --phase2 3
done
