#!/bin/bash
# usage: ./against_case.sh LABEL MODE LEGACY_DIR MIG_DIR TEXT ENTRY (paths relative to this hunt)
# scratch repository scratch/LABEL: HEAD = every file of LEGACY_DIR (script + carriers, dotfiles included);
# work tree = MIG_DIR's files (the codemod's migrated carriers) with TEXT copied over ENTRY; then
# `verify ENTRY --against HEAD --mode MODE --steps 12 $EXTRA` (EXTRA: e.g. --legacy-env XLA_USE_BF16=1) under the XLA lock -> verify_logs/LABEL.MODE.{txt,json}
LABEL=$1; MODE=$2; LEG=$3; MIG=$4; TEXT=$5; N=$6
H=/work/wt/rejudge/bench/unseen/hunt35; ROOT=/work/wt/rejudge; J=/work/wt/rejudge/bench/unseen/rejudge55; R=$J/scratch/$LABEL
rm -rf "$R"; mkdir -p "$R"; cd "$R" && git init -q
cp -a "$H/$LEG"/. .; rm -rf out preds runs; git add -A; git -c user.name=h -c user.email=h@h commit -qm legacy
cp -a "$H/$MIG"/. .; cp "$H/$TEXT" "$N"; rm -rf out preds runs
flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$ROOT /work/main/.venv/bin/python -m bf16_migrate verify "$N" --against HEAD --mode "$MODE" --steps 12 $EXTRA --json "$J/verify_logs/$LABEL.$MODE.json" > "$J/verify_logs/$LABEL.$MODE.txt" 2> "$J/verify_logs/$LABEL.$MODE.verify-stderr.txt"
echo "exit $?" >> "$J/verify_logs/$LABEL.$MODE.txt"; echo "$LABEL $MODE exit $(tail -1 "$J/verify_logs/$LABEL.$MODE.txt")"
