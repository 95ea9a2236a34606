#!/bin/bash
# the verify runs, in the order they ran (each under the XLA lock through vrun.sh)
cd /work/wt/hunt11/bench/unseen/hunt11
H=bench/unseen/hunt11
for m in stochastic gpu-compatible amp; do
  ./vrun.sh accum_vscode.py-only $m $H/accum_vscode/train_tokens.py --legacy-env XLA_USE_BF16=1
  ./vrun.sh score_supervisor.py-only $m $H/score_supervisor/score.py --legacy-env XLA_USE_BF16=1
  ./vrun.sh ebm_makefile.py-only $m $H/ebm_makefile/ebm.py --legacy-env XLA_USE_BF16=1
  ./vrun.sh dpsgd_shebang.py-only $m $H/dpsgd_shebang/dp_train.py --legacy-env XLA_USE_BF16=1
  ./vrun.sh gumbel_pyproject.py-only $m $H/gumbel_pyproject/select_features.py --legacy-env XLA_USE_BF16=1
done
./vrun.sh flow_systemd.py-only amp $H/flow_systemd/flow.py --legacy-env XLA_DOWNCAST_BF16=1
./vrun.sh lengths_cfgmodule.py-only amp $H/lengths_cfgmodule/train_lengths.py --legacy-env XLA_USE_BF16=1
