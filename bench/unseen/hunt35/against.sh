#!/bin/bash
# usage: ./against.sh LABEL MODE LEGACY TEXT (paths relative to this hunt): a scratch repository scratch/LABEL whose HEAD
# holds LEGACY as the script's own name and whose work tree holds TEXT; then `verify NAME --against HEAD --mode MODE
# --steps 12` under the XLA lock -> verify_logs/LABEL.MODE.txt (+ .json, .verify-stderr.txt)
LABEL=$1; MODE=$2; LEG=$3; MIG=$4
H=$(cd "$(dirname "$0")" && pwd); ROOT=$(git -C "$H" rev-parse --show-toplevel); R=$H/scratch/$LABEL; N=$(basename "$LEG")
rm -rf "$R"; mkdir -p "$R"; cd "$R" && git init -q
cp "$H/$LEG" "$N"; git add "$N"; git -c user.name=h -c user.email=h@h commit -qm legacy
cp "$H/$MIG" "$N"
flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$ROOT /work/main/.venv/bin/python -m bf16_migrate verify "$N" --against HEAD --mode "$MODE" --steps 12 --json "$H/verify_logs/$LABEL.$MODE.json" > "$H/verify_logs/$LABEL.$MODE.txt" 2> "$H/verify_logs/$LABEL.$MODE.verify-stderr.txt"
echo "exit $?" >> "$H/verify_logs/$LABEL.$MODE.txt"; echo "$LABEL $MODE exit $(tail -1 "$H/verify_logs/$LABEL.$MODE.txt")"
