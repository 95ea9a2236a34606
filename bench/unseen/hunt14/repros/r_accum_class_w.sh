#!/bin/bash
# The accum case's own script and repros/r_f64_class_weights.py, each migrated (stochastic, amp), with one
# line added after the loss (after the migration: a probe in the source changes what the codemod does)
# that prints the device dtypes (IR) of class_w and class_w[yb].sum(). Legacy run for contrast.
# -> verify_logs/repro.r_accum_class_w.txt
cd /work/wt/hunt14
P='            print("IR: class_w", ir_dtype(class_w), "| class_w[yb].sum()", ir_dtype(class_w[yb].sum()), "| loss", ir_dtype(loss))'
probe() { python3 - "$1" "$P" <<'PY'
import sys
f, line = sys.argv[1], sys.argv[2]
s = open(f).read()
s = s.replace("import torch_xla.core.xla_model as xm\n", "import torch_xla.core.xla_model as xm\nimport sys; sys.path.insert(0, '/work/wt/hunt14/bench/unseen/hunt14/repros'); from _ir import ir_dtype\n", 1)
out = []
for l in s.splitlines():
    out.append(l)
    if l.strip().startswith("loss = per.sum() /"):
        out.append(" " * (len(l) - len(l.lstrip())) + line.strip())
open(f, "w").write("\n".join(out) + "\n")
PY
}
{
for S in bench/unseen/hunt14/accum_seta_envfile/train_imbalanced.py bench/unseen/hunt14/repros/r_f64_class_weights.py; do
  A=""; case $S in *train_imbalanced.py) A="--steps 1 --accum 1";; esac
  echo "######## $S"
  cp $S /tmp/h14acc.legacy.py; probe /tmp/h14acc.legacy.py
  echo "== legacy (XLA_USE_BF16=1)"
  flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU XLA_USE_BF16=1 timeout 300 /work/main/.venv/bin/python /tmp/h14acc.legacy.py $A 2>&1 | grep "IR:\|^step" | head -2
  for m in stochastic amp; do
    PYTHONPATH=/work/wt/hunt14 /work/main/.venv/bin/python -m bf16_migrate - --stdin-filename $S --mode $m --legacy-env XLA_USE_BF16=1 < $S > /tmp/h14acc.$m.py 2>/dev/null
    probe /tmp/h14acc.$m.py
    echo "== migrated $m: lines with class_w"; grep -n "class_w" /tmp/h14acc.$m.py | grep -v ir_dtype
    flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU timeout 300 /work/main/.venv/bin/python /tmp/h14acc.$m.py $A 2>&1 | grep "IR:\|^step\|Error" | head -2 | cut -c1-250
  done
done
} > bench/unseen/hunt14/verify_logs/repro.r_accum_class_w.txt 2>&1
