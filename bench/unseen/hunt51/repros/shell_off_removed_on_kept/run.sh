#!/bin/bash
# Migrate a copy (each mode), show the launcher's diff, run both launchers with XLA_USE_BF16=1 inherited.
H=/work/wt/hunt51/bench/unseen/hunt51; S=$H/repros/shell_off_removed_on_kept
for M in stochastic gpu-compatible amp; do
  T=/tmp/hunt51/rp/shell_off_removed_on_kept.$M; rm -rf "$T"; mkdir -p "$T"; cp "$S"/run_mixed.sh "$S"/pretrain.py "$T"/
  echo "== $M"
  (cd "$T" && PYTHONPATH=/work/wt/hunt51 /work/main/.venv/bin/python -m bf16_migrate migrate . --mode $M 2>&1 | grep "BFM0\|BFM1" | grep -v "^ *\[" | cut -c1-200)
  diff "$S/run_mixed.sh" "$T/run_mixed.sh"
  echo "-- legacy   (outer XLA_USE_BF16=1): $(cd "$S" && XLA_USE_BF16=1 PATH=/work/main/.venv/bin:$PATH bash run_mixed.sh)"
  echo "-- migrated (outer XLA_USE_BF16=1): $(cd "$T" && XLA_USE_BF16=1 PATH=/work/main/.venv/bin:$PATH bash run_mixed.sh)"
done
