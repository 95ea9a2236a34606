#!/bin/bash
# the verify queue of hunt10, in the order it ran (each verify takes the XLA lock by itself)
cd /work/wt/hunt10/bench/unseen/hunt10
H=bench/unseen/hunt10
while read -r label mode script rest; do
  [ -z "$label" ] && continue
  [ -f verify_logs/$label.$mode.txt ] && continue
  timeout 900 ./vrun.sh "$label" "$mode" "$H/$script" $rest
done <<'Q'
maml_argparse.inline_variant stochastic maml_argparse/inline_variant/maml.py
maml_argparse.inline_variant gpu-compatible maml_argparse/inline_variant/maml.py
hetero_tox.py-only stochastic hetero_tox/hetero.py --legacy-env XLA_USE_BF16=1 -- --steps 12 --out out
hetero_tox.py-only amp hetero_tox/hetero.py --legacy-env XLA_USE_BF16=1 -- --steps 12 --out out
Q
