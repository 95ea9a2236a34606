#!/bin/bash
# usage: repros/amp_loss_in_helper/run.sh: migrate a copy in amp, show where autocast landed, run it under the stub.
H=$(cd "$(dirname "$0")" && pwd); WT=$(git -C "$H" rev-parse --show-toplevel); PY=/work/main/.venv/bin/python
T=/tmp/review58/repro.amp_loss_in_helper; echo "T=$T"; rm -rf "$T"; mkdir -p "$T"; cp "$H/train.py" "$T/"
cd "$T" && PYTHONPATH=$WT $PY -m bf16_migrate migrate . --mode amp 2>&1 | tail -2
grep -n "autocast\|F.cross_entropy\|loss = " train.py | grep -v '^ *[0-9]*: *\(#\|"\)'
STEPS=2 PYTHONPATH=$WT/bench/unseen/hunt_tools/stub $PY train.py 2>&1 | grep -v -i warn | tail -2
