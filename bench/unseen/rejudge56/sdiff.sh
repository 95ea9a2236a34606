#!/bin/bash
# sdiff.sh LABEL SRC_DIR ENTRY [extra opts]: copy SRC_DIR to /tmp/rj56/LABEL.MODE, run --diff in 3 modes
LABEL=$1; SRC=$2; ENTRY=$3; shift 3
OUT=/work/wt/rejudge56/bench/unseen/rejudge56/diffs
for MODE in stochastic gpu-compatible amp; do
  D=/tmp/rj56/$LABEL.$MODE; rm -rf $D; mkdir -p $D; cp -r $SRC/. $D/
  (cd $D && PYTHONPATH=/work/wt/rejudge56 /work/main/.venv/bin/python -m bf16_migrate $ENTRY --mode $MODE --diff "$@" >$OUT/$LABEL.$MODE.diff 2>$OUT/$LABEL.$MODE.stderr)
done
