#!/bin/bash
# A script that only MENTIONS the switch (its usage line in the docstring) and sets it nowhere itself. In a
# scratch repository (HEAD = legacy):
#  1. the codemod's stochastic migration, `verify score.py --against HEAD`
#  2. a WRONG hand text: the script unchanged but `.float()` at the host exit (FP32 throughout)
#  3. the same wrong text through plain `verify score.py --legacy-env XLA_USE_BF16=1` (control: the legacy run has the switch)
#  4. plain `verify score.py` on the legacy file without --legacy-env (what does the legacy run get?)
H=/work/wt/rejudge/bench/unseen/hunt35/repros/docstring_mention; ROOT=/work/wt/rejudge; R=$(mktemp -d); L=/work/wt/rejudge/bench/unseen/rejudge55/verify_logs
V() { out=$1; shift; flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$ROOT /work/main/.venv/bin/python -m bf16_migrate verify score.py --steps 12 "$@" > "$out" 2>&1; echo "exit $?" >> "$out"; echo "== $(basename $out)"; grep -E "^legacy run under|^matches|^trace|^precision|^VERDICT|^exit|^error" "$out"; }
cp "$H"/score.py "$R"; cd "$R" && git init -q && git add -A && git -c user.name=h -c user.email=h@h commit -qm legacy
PYTHONPATH=$ROOT /work/main/.venv/bin/python -m bf16_migrate score.py --mode stochastic --diff 2>&1 | grep -E "^[-+][^-+]|BFM"
V $L/repro.docstring_mention.0-plain-legacy.txt
PYTHONPATH=$ROOT /work/main/.venv/bin/python -m bf16_migrate score.py --mode stochastic 2>/dev/null
V $L/repro.docstring_mention.1-codemod-against.txt --against HEAD
git checkout -q HEAD -- score.py; sed -i 's/out.cpu().numpy()/out.cpu().float().numpy()/' score.py
V $L/repro.docstring_mention.2-fp32-against.txt --against HEAD
rm -rf "$R"
