#!/bin/bash
# idempotence + parse: each script, each mode: migrate via stdin, save *.MODE.mig.py, migrate the output again, diff.
cd "$(dirname "$0")"; ROOT=$(git rev-parse --show-toplevel); PY=${PYTHON:-/work/main/.venv/bin/python}
run() { PYTHONPATH=$ROOT "$PY" -m bf16_migrate - --mode "$1" --stdin-filename "$2" "${@:3}"; }
for spec in "cases/hook_feats/train_probe.py" "cases/hook_plain/train_probe.py" "cases/ppo_orth/ppo.py" "cases/ste_quant/qat.py" \
  "cases/ste_mask/qat.py" "cases/welford_norm/value_fit.py" "cases/sam_trainer/train_sam.py" \
  "scriptonly/xbm/train_xbm.py --legacy-env XLA_USE_BF16=1" "scriptonly/dtype/train_rnn.py --legacy-env XLA_USE_BF16=1" \
  "cases/carriers/setupcfg/train.py"; do
  set -- $spec; S=$1; shift
  for m in stochastic gpu-compatible amp; do
    O=${S%.py}.$m.mig.py
    run $m "$S" "$@" < "$S" > "$O" 2> verify_logs/$(echo ${S%.py} | tr / _).$m.mig.stderr; rc1=$?
    run $m "$S" "$@" < "$O" > /tmp/h34_idem.py 2>/dev/null
    n=$(diff "$O" /tmp/h34_idem.py | wc -l)
    "$PY" -c "import ast,sys; ast.parse(open(sys.argv[1]).read())" "$O" && p=ok || p=FAIL
    echo "$S $m rc=$rc1 second-run-diff-lines=$n parse=$p"
  done
done
