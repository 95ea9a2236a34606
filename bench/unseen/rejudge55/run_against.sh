#!/bin/bash
# usage: repros/run_against.sh DIR LEGACY TEXT: scratch repo (HEAD = DIR/LEGACY under its name, work tree = DIR/TEXT),
# `verify NAME --against HEAD --mode stochastic --steps 12` under the XLA lock -> verify_logs/repro.DIR.TEXT.txt
H=/work/wt/rejudge/bench/unseen/hunt35/repros; ROOT=/work/wt/rejudge; D=$1; N=$2; T=$3; R=$(mktemp -d)
O=/work/wt/rejudge/bench/unseen/rejudge55/verify_logs/repro.$D.${T%.py}.txt
cp "$H/$D/$N" "$R/$N"; cd "$R" && git init -q && git add -A && git -c user.name=h -c user.email=h@h commit -qm legacy
cp "$H/$D/$T" "$N"
flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$ROOT /work/main/.venv/bin/python -m bf16_migrate verify "$N" --against HEAD --mode stochastic --steps 12 > "$O" 2>&1
echo "exit $?" >> "$O"; echo "== $(basename $O)"; grep -E "^legacy run under|^matches|^ +the migrated run did not|^ +farthest|^trace|^VERDICT|^exit|^error|BFM2[0-9][0-9]" "$O"; rm -rf "$R"
