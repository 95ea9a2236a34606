#!/bin/bash
# usage: HUNT/vrun.sh LABEL MODE SCRIPT [verify options...] [-- script args]
# runs `bf16-migrate verify` under the shared XLA lock, with the package of the checkout HUNT lies in (EXTRA_PP
# added to PYTHONPATH); report -> HUNT/verify_logs/LABEL.MODE.txt. One copy for every hunt (links here).
LABEL=$1; MODE=$2; SCRIPT=$3; shift 3
H=$(cd "$(dirname "$0")" && pwd); ROOT=$(git -C "$H" rev-parse --show-toplevel); PY=${PYTHON:-/work/main/.venv/bin/python}
cd "$ROOT"
L=${H#"$ROOT"/}/verify_logs
flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$ROOT${EXTRA_PP:+:$EXTRA_PP} "$PY" -m bf16_migrate verify "$SCRIPT" --mode "$MODE" --steps 12 "$@" > $L/$LABEL.$MODE.txt 2> $L/$LABEL.$MODE.verify-stderr.txt
rc=$?
echo "exit $rc" >> $L/$LABEL.$MODE.txt
echo "$LABEL $MODE exit $rc"
