#!/bin/bash
# idempotence (a second migrate changes 0 lines) and re-parse of every migrated .py -> verify_logs/idempotence.txt
cd "$(dirname "$0")"; H=$PWD; ROOT=$(git -C "$H" rev-parse --show-toplevel); PY=${PYTHON:-/work/main/.venv/bin/python}
for c in lora_merge prompt_tune probe_unfreeze accum_ckpt lowrank_param prefix_kv; do
  for m in stochastic gpu-compatible amp; do
    T=/tmp/hunt52mig/$c.$m; rm -rf "$T"; mkdir -p /tmp/hunt52mig; cp -r "cases/$c" "$T"
    (cd "$T" && PYTHONPATH=$ROOT "$PY" -m bf16_migrate migrate . --mode $m > /dev/null 2>&1)
    (cd "$T" && PYTHONPATH=$ROOT "$PY" -m bf16_migrate . --mode $m --diff > /tmp/hunt52_idem.diff 2>/dev/null; echo "$c.$m second migrate rc=$? changed lines=$(grep -c '^[-+][^-+]' /tmp/hunt52_idem.diff)"; for p in $(find . -name "*.py"); do "$PY" -c "import ast,sys; ast.parse(open(sys.argv[1]).read())" "$p" || echo "PARSE FAIL $p"; done)
  done
done
