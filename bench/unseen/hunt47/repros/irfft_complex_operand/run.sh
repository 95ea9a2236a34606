#!/bin/bash
# Static: the codemod on repro.py (refused: BFM155 at irfft) and on repro_float.py (migrated: BFM156, model cast to bf16,
# which also makes the complex64 filter a real bf16 tensor), then both migrated texts' numerics on the CPU (stub).
R=$(cd "$(dirname "$0")" && pwd); H=$(dirname "$(dirname "$R")"); ROOT=$(git -C "$H" rev-parse --show-toplevel); PY=${PYTHON:-/work/main/.venv/bin/python}
for f in repro.py repro_mul.py repro_c64.py repro_float.py; do
  T=/tmp/hunt47r/irfft.$f; rm -rf $T; mkdir -p $T; cp "$R/$f" $T/
  echo "== $f: migrate --mode stochastic"; (cd $T && PYTHONPATH=$ROOT "$PY" -m bf16_migrate migrate . --mode stochastic 2>&1 | grep -E "BFM15|changed")
  echo "== $f: run on the stub (STEPS=2)"; (cd $T && STEPS=2 PYTHONPATH=$H/repros/stub "$PY" $f 2>&1 | grep -v "^ \|^$" | tail -3)
done
echo "== irfft of a spectrum vs irfft of spectrum.float() (CPU)"
"$PY" -c "import torch; s = torch.fft.rfft(torch.arange(8.0)); print(torch.fft.irfft(s, n=8)); print(torch.fft.irfft(s.float(), n=8))" 2>&1
echo "== Module.to(torch.bfloat16) on a complex64 parameter (CPU)"
"$PY" -c "import torch, torch.nn as nn; m = nn.Module(); m.w = nn.Parameter(torch.polar(torch.ones(3), torch.tensor([0.5, 1.0, 2.0]))); print(m.w.dtype, m.to(torch.bfloat16).w.dtype, m.w.detach())" 2>&1 | grep -v Warn
