#!/bin/bash
# Gap 1's expected fix on the device: scratch repository with HEAD = cases/base_trainer (legacy), work tree = the
# codemod's stochastic migration + hand/base_trainer.trainer_base.fixed.stochastic.py over trainer_base.py (the mixin's
# move casts floating tensors to bf16); verify train.py --against HEAD -> verify_logs/base_trainer_fixed.stochastic.txt
H=$(cd "$(dirname "$0")" && pwd); ROOT=$(git -C "$H" rev-parse --show-toplevel); PY=${PYTHON:-/work/main/.venv/bin/python}
S=/tmp/hunt46s/base_trainer_fixed; rm -rf "$S"; mkdir -p "$S"; cp -r "$H/cases/base_trainer"/. "$S"/
(cd "$S" && git init -q && git add -A && git -c user.email=h@x -c user.name=h commit -qm legacy)
(cd "$S" && PYTHONPATH=$ROOT "$PY" -m bf16_migrate migrate . --mode stochastic >/dev/null 2>&1)
cp "$H/hand/base_trainer.trainer_base.fixed.stochastic.py" "$S/trainer_base.py"
O=$H/verify_logs/base_trainer_fixed.stochastic.txt
(cd "$S" && git diff --stat; flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$ROOT timeout 1500 "$PY" -m bf16_migrate verify train.py --against HEAD --mode stochastic --steps 6 > "$O" 2>&1; echo "exit $?" >> "$O")
grep -E "VERDICT|^exit|BFM2" "$O" | head -12
