#!/bin/bash
# usage: hunt41/after57/vhand57.sh: verify --against HEAD two hand variants of the codemod's stochastic migration of
# repros/downcast_f64_input_hook (scratch repos /tmp/rejudge57/h/f64hook.V, HEAD = the legacy repro):
# hostin = the batch cast on the host before the move (`downcast_floating(xb).to(dev)`), hostboth = that and the model
# cast before its move (`downcast_bf16(Net(...)).to(dev)`) -> after57/hand.f64hook.V.verify.txt
A=$(cd "$(dirname "$0")" && pwd); ROOT=$(git -C "$A" rev-parse --show-toplevel)
for v in hostin hostboth; do T=/tmp/rejudge57/h/f64hook.$v; O=$A/hand.f64hook.$v.verify.txt
  (cd "$T" && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$ROOT timeout 900 /work/main/.venv/bin/python -m bf16_migrate verify repro.py --against HEAD --mode stochastic --steps 4 > "$O" 2>&1; echo "exit $?" >> "$O")
  echo "$v: $(grep VERDICT "$O") $(grep -E '^graph' "$O")"; done
