#!/bin/bash
# codemod migrations, verified one after another (each under the XLA lock)
H=bench/unseen/hunt23
cd "$(dirname "$0")"
for spec in "mt stochastic ema_teacher/train_mean_teacher.py" "mt amp ema_teacher/train_mean_teacher.py" \
            "tc stochastic text_f64emb/train_textcls.py" "tc amp text_f64emb/train_textcls.py" \
            "hn stochastic hetero_nll/train_hetero.py" "hn amp hetero_nll/train_hetero.py" \
            "mt gpu-compatible ema_teacher/train_mean_teacher.py"; do
  set -- $spec
  ./vrun.sh $1 $2 $H/$3 --json $H/verify_logs/$1.$2.json
done
