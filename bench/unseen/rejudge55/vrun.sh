#!/bin/bash
# copy of hunt34/vrun.sh: usage ./vrun.sh LABEL MODE SCRIPT(rel. to the worktree) [verify options]; PYTHONPATH=/work/wt/rejudge;
# report -> rejudge55/verify_logs/LABEL.MODE.txt (+ .json, .verify-stderr.txt)
LABEL=$1; MODE=$2; SCRIPT=$3; shift 3
ROOT=/work/wt/rejudge; L=$ROOT/bench/unseen/rejudge55/verify_logs; cd $ROOT
flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$ROOT /work/main/.venv/bin/python -m bf16_migrate verify "$SCRIPT" --mode "$MODE" --steps 12 --json $L/$LABEL.$MODE.json "$@" > $L/$LABEL.$MODE.txt 2> $L/$LABEL.$MODE.verify-stderr.txt
rc=$?; echo "exit $rc" >> $L/$LABEL.$MODE.txt; echo "$(date +%T) $LABEL $MODE exit $rc"
