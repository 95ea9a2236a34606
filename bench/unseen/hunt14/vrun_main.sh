#!/bin/bash
# usage: vrun_main.sh LABEL MODE SCRIPT [verify options...] [-- script args]: as vrun.sh, with the lead's main checkout
# (after the fixes of stop 49); report -> verify_logs/after49.LABEL.MODE.txt
LABEL=$1; MODE=$2; SCRIPT=$3; shift 3
cd /work/main
L=bench/unseen/hunt14/verify_logs
flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=/work/main /work/main/.venv/bin/python -m bf16_migrate verify "$SCRIPT" --mode "$MODE" --steps 12 "$@" > $L/after49.$LABEL.$MODE.txt 2> $L/after49.$LABEL.$MODE.verify-stderr.txt
rc=$?
echo "exit $rc" >> $L/after49.$LABEL.$MODE.txt
echo "$LABEL $MODE exit $rc"
