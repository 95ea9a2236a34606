#!/bin/bash
# usage: ./against_dir.sh LABEL MODE LEGACY_DIR TEXT_DIR ENTRY: as against.sh for a directory of files: scratch/LABEL's HEAD
# holds LEGACY_DIR's *.py, its work tree TEXT_DIR's; then `verify ENTRY --against HEAD` -> verify_logs/LABEL.MODE.txt
LABEL=$1; MODE=$2; LEG=$3; MIG=$4; N=$5
H=$(cd "$(dirname "$0")" && pwd); ROOT=$(git -C "$H" rev-parse --show-toplevel); R=$H/scratch/$LABEL
rm -rf "$R"; mkdir -p "$R"; cd "$R" && git init -q
cp "$H/$LEG"/*.py .; git add .; git -c user.name=h -c user.email=h@h commit -qm legacy
cp "$H/$MIG"/*.py .
flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$ROOT /work/main/.venv/bin/python -m bf16_migrate verify "$N" --against HEAD --mode "$MODE" --steps 12 --json "$H/verify_logs/$LABEL.$MODE.json" > "$H/verify_logs/$LABEL.$MODE.txt" 2> "$H/verify_logs/$LABEL.$MODE.verify-stderr.txt"
echo "exit $?" >> "$H/verify_logs/$LABEL.$MODE.txt"; echo "$LABEL $MODE exit $(tail -1 "$H/verify_logs/$LABEL.$MODE.txt")"
