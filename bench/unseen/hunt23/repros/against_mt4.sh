#!/bin/bash
# gap 1 through the CLI's CI path: a scratch repository whose HEAD holds the legacy mean-teacher script and whose
# work tree holds the hand-made MT4 migration; `verify train.py --against HEAD` (under the XLA lock).
R=/tmp/h23_against; H=$(cd "$(dirname "$0")/.." && pwd); ROOT=$(git -C "$H" rev-parse --show-toplevel)
rm -rf $R; mkdir -p $R; cd $R; git init -q
cp $H/ema_teacher/train_mean_teacher.py train.py; git add train.py; git -c user.name=h -c user.email=h@h commit -qm legacy
cp $H/wrong/MT4_ema_f32_island.py train.py
flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$ROOT /work/main/.venv/bin/python -m bf16_migrate verify train.py --against HEAD --mode stochastic --steps 12 > $H/verify_logs/MT4_against.stochastic.txt 2> $H/verify_logs/MT4_against.stochastic.verify-stderr.txt
echo "exit $?" >> $H/verify_logs/MT4_against.stochastic.txt
