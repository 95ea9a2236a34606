#!/bin/bash
# stochastic mode, the switch set by a launcher: the migrated tree casts the model and inputs but sets
# NEURON_RT_STOCHASTIC_ROUNDING_EN nowhere (run.mig.sh drops the variable). `verify train.py --against HEAD
# --mode stochastic` -> PASS (false PASS: evidence.rounding_problem skips launcher-set switches).
H=/work/wt/rejudge/bench/unseen/hunt35/repros/sr_launcher; ROOT=/work/wt/rejudge; R=$(mktemp -d); O=/work/wt/rejudge/bench/unseen/rejudge55/verify_logs/repro.sr_launcher.txt
cp "$H"/run.sh "$H"/train.py "$R"; cd "$R" && git init -q && git add -A && git -c user.name=h -c user.email=h@h commit -qm legacy
cp "$H"/run.mig.sh run.sh; cp "$H"/train.mig.py train.py; git diff --stat
flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$ROOT /work/main/.venv/bin/python -m bf16_migrate verify train.py --against HEAD --mode stochastic --steps 12 > "$O" 2>&1
echo "exit $?" >> "$O"; grep -E "^legacy run under|^precision|^matches|^trace|^VERDICT|^exit|rounding" "$O"; rm -rf "$R"
