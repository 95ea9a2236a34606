#!/bin/bash
# idempotence + re-parse: migrate a copy of each case in each mode, migrate again, count changed lines; ast.parse every .py
cd "$(dirname "$0")"; H=$PWD; ROOT=$(git rev-parse --show-toplevel); PY=${PYTHON:-/work/main/.venv/bin/python}
for c in cases/*/; do c=$(basename "$c"); for m in stochastic gpu-compatible amp; do
  T=/tmp/hunt41idem/$c.$m; rm -rf "$T"; mkdir -p "$(dirname "$T")"; cp -r "cases/$c" "$T"
  extra=""; [ "$c" = mp_resume ] && extra="--legacy-env XLA_USE_BF16=1"
  (cd "$T" && PYTHONPATH=$ROOT "$PY" -m bf16_migrate migrate . --mode $m $extra >/dev/null 2>&1)
  rm -rf "$T.1"; cp -r "$T" "$T.1"
  (cd "$T" && PYTHONPATH=$ROOT "$PY" -m bf16_migrate migrate . --mode $m $extra >/dev/null 2>&1)
  n=$(diff -r "$T.1" "$T" | grep -c '^[<>]')
  p=$("$PY" -c "import ast,glob,sys; [ast.parse(open(f).read()) for f in glob.glob(sys.argv[1]+'/*.py')]; print('parse ok')" "$T" 2>&1 | tail -1)
  echo "$c $m second-run changed lines: $n; $p"
done; done
