#!/bin/bash
# usage: repros/against.sh LABEL MODE LEGACY_SCRIPT MIGRATED_TEXT: a scratch repository (/tmp/h27_against_LABEL) whose
# HEAD holds the legacy script as train.py and whose work tree holds MIGRATED_TEXT; then the CLI's CI path,
# `verify train.py --against HEAD --mode MODE --steps 12`, under the XLA lock -> verify_logs/LABEL_against.MODE.txt
LABEL=$1; MODE=$2; LEG=$3; MIG=$4
H=$(cd "$(dirname "$0")/.." && pwd); ROOT=$(git -C "$H" rev-parse --show-toplevel); R=/tmp/h27_against_$LABEL
rm -rf $R; mkdir -p $R; cd $R; git init -q
cp $ROOT/$LEG train.py; git add train.py; git -c user.name=h -c user.email=h@h commit -qm legacy
cp $ROOT/$MIG train.py
flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$ROOT /work/main/.venv/bin/python -m bf16_migrate verify train.py --against HEAD --mode $MODE --steps 12 > $H/verify_logs/${LABEL}_against.$MODE.txt 2> $H/verify_logs/${LABEL}_against.$MODE.verify-stderr.txt
echo "exit $?" >> $H/verify_logs/${LABEL}_against.$MODE.txt; echo "$LABEL against $MODE done"
