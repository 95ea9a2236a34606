#!/bin/bash
# infer_csv with its checkpoint made beforehand (one churn.pt for every run), then verify as vqueue.sh does
cd "$(dirname "$0")"
while pgrep -f "vq4.sh" >/dev/null; do sleep 5; done
H=$PWD; ROOT=$(git rev-parse --show-toplevel); PY=/work/main/.venv/bin/python
T=/tmp/hunt37v/infer_csv_ckpt.stochastic; rm -rf $T; mkdir -p /tmp/hunt37v; cp -r cases/infer_csv $T
(cd $T && PYTHONPATH=$H/repros/stub $PY -c "import torch, predict; torch.manual_seed(0); predict.load('churn.pt')" && ls -la churn.pt)
O=$H/verify_logs/infer_csv_ckpt.stochastic.verify.txt
(cd $T && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$ROOT timeout 900 $PY -m bf16_migrate verify predict.py --mode stochastic --steps 12 --legacy-env XLA_USE_BF16=1 -- churn.pt > $O 2>&1; echo "exit $?" >> $O)
grep -E "^(runs|matches|trace) |VERDICT|^exit" $O
