#!/bin/bash
# usage: vrun_main.sh LABEL MODE SCRIPT [verify options...]: as vrun.sh, with /work/main's package (the lead's
# fixes after the hunt), report -> verify_logs/after48.LABEL.MODE.txt
LABEL=$1; MODE=$2; SCRIPT=$3; shift 3
cd /work/main
L=bench/unseen/hunt13/verify_logs
flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=/work/main /work/main/.venv/bin/python -m bf16_migrate verify "$SCRIPT" --mode "$MODE" --steps 12 "$@" > $L/after48.$LABEL.$MODE.txt 2> $L/after48.$LABEL.$MODE.verify-stderr.txt
rc=$?
echo "exit $rc" >> $L/after48.$LABEL.$MODE.txt
echo "$LABEL $MODE exit $rc"
