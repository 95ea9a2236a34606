#!/bin/bash
# Idempotence and re-parse of the migrated copies stub_all.sh left in /tmp/hunt50run: a second migrate (--diff) must
# change 0 lines and every .py must ast.parse -> verify_logs/idempotence.txt
H=$(cd "$(dirname "$0")" && pwd); ROOT=$(git -C "$H" rev-parse --show-toplevel); PY=${PYTHON:-/work/main/.venv/bin/python}
cd /tmp/hunt50run && for d in */; do d=${d%/}; case $d in *.unmigrated) continue;; esac; m=${d#*.}
  out=$(cd "$d" && PYTHONPATH=$ROOT "$PY" -m bf16_migrate . --mode "$m" --diff 2>/dev/null | grep -c "^[-+][^-+]")
  p=$(cd "$d" && "$PY" -c "
import ast, glob
n = 0
for f in glob.glob('**/*.py', recursive=True):
    ast.parse(open(f).read()); n += 1
print(n)")
  echo "$d changed_lines=$out py_reparsed=$p"; done | tee "$H/verify_logs/idempotence.txt"
