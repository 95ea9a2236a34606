#!/bin/bash
# verify's CI path on a notebook launcher (`%env XLA_USE_BF16=1` then `!python score.py`). In a scratch repository
# (HEAD = legacy), migrate the copy (stochastic), then:
#  1. `verify --against HEAD --list` / `verify --against HEAD`: no script selected, "nothing verified: no legacy
#     script's migration changed" (score.py did change);
#  2. `verify score.py --against HEAD` on the codemod's migration: the legacy side runs WITHOUT the switch (no
#     "legacy run under" line; legacy == FP32 reference) -> the correct bf16 migration FAILs;
#  3. the same with score.py put back as it was but for `.float()` at its host exit (the notebook's %env removed:
#     the script now serves in FP32, no cast): PASS -> a false PASS.
H=/work/wt/rejudge/bench/unseen/hunt35/repros/notebook_bang_python; ROOT=/work/wt/rejudge; R=$(mktemp -d); L=/work/wt/rejudge/bench/unseen/rejudge55/verify_logs
V() { flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$ROOT /work/main/.venv/bin/python -m bf16_migrate verify score.py --against HEAD --steps 12 > "$1" 2>&1; echo "exit $?" >> "$1"; }
cp "$H"/score.py "$H"/run.ipynb "$R"; cd "$R" && git init -q && git add -A && git -c user.name=h -c user.email=h@h commit -qm legacy
PYTHONPATH=$ROOT /work/main/.venv/bin/python -m bf16_migrate . --mode stochastic 2>&1 | grep BFM001
git status --short
PYTHONPATH=$ROOT /work/main/.venv/bin/python -m bf16_migrate verify --against HEAD --list
PYTHONPATH=$ROOT /work/main/.venv/bin/python -m bf16_migrate verify --against HEAD; echo "exit $?"
V $L/repro.notebook_bang_python.codemod.txt; grep -E "^legacy run under|^VERDICT|^exit" $L/repro.notebook_bang_python.codemod.txt
git checkout -q HEAD -- score.py; sed -i 's/out.cpu().numpy()/out.cpu().float().numpy()/' score.py; git diff --stat
V $L/repro.notebook_bang_python.unchanged.txt; grep -E "^legacy run under|^VERDICT|^exit" $L/repro.notebook_bang_python.unchanged.txt
rm -rf "$R"
