#!/bin/bash
# usage: vrun.sh LABEL MODE SCRIPT [verify options...] [-- script args]
# runs `bf16-migrate verify` under the shared XLA lock; report -> verify_logs/LABEL.MODE.txt
LABEL=$1; MODE=$2; SCRIPT=$3; shift 3
cd /work/wt/hunt14
L=bench/unseen/hunt14/verify_logs
flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=/work/wt/hunt14${EXTRA_PP:+:$EXTRA_PP} /work/main/.venv/bin/python -m bf16_migrate verify "$SCRIPT" --mode "$MODE" --steps 12 "$@" > $L/$LABEL.$MODE.txt 2> $L/$LABEL.$MODE.verify-stderr.txt
rc=$?
echo "exit $rc" >> $L/$LABEL.$MODE.txt
echo "$LABEL $MODE exit $rc"
