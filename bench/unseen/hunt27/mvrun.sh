#!/bin/bash
# usage: hunt27/mvrun.sh LABEL MODE SCRIPT MIGRATED [steps]: verify_script(migrated_source=MIGRATED) under the XLA lock
LABEL=$1; MODE=$2; SCRIPT=$3; MIG=$4; STEPS=${5:-12}
H=$(cd "$(dirname "$0")" && pwd); ROOT=$(git -C "$H" rev-parse --show-toplevel); PY=${PYTHON:-/work/main/.venv/bin/python}
cd "$ROOT"; L=${H#"$ROOT"/}/verify_logs
flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$ROOT "$PY" $H/repros/mvrun.py "$SCRIPT" "$MODE" "$MIG" "$STEPS" ${JSON:+$JSON} > $L/$LABEL.$MODE.txt 2> $L/$LABEL.$MODE.verify-stderr.txt
rc=$?; echo "exit $rc" >> $L/$LABEL.$MODE.txt; echo "$LABEL $MODE exit $rc"
