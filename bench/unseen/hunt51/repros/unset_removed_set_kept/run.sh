#!/bin/bash
# Migrate a copy in each mode, show the diff of precision.py, run repro.py (no torch_xla needed).
H=/work/wt/hunt51/bench/unseen/hunt51; S=$H/repros/unset_removed_set_kept
for M in stochastic gpu-compatible amp; do
  T=/tmp/hunt51/rp/unset_removed_set_kept.$M; rm -rf "$T"; mkdir -p "$T"; cp "$S"/*.py "$T"/
  echo "== $M"
  (cd "$T" && PYTHONPATH=/work/wt/hunt51 /work/main/.venv/bin/python -m bf16_migrate migrate . --mode $M 2>&1 | grep BFM0 | cut -c1-220)
  diff "$S/precision.py" "$T/precision.py"
  echo "-- legacy:   $(cd "$S" && /work/main/.venv/bin/python repro.py)"
  echo "-- migrated: $(cd "$T" && /work/main/.venv/bin/python repro.py)"
done
