#!/bin/bash
# usage: ./idem.sh CASE_DIR [migrate options]: migrate a copy (each mode), then --diff it again: the second run must change nothing.
CASE=$1; shift
H=$(cd "$(dirname "$0")" && pwd); ROOT=$(git -C "$H" rev-parse --show-toplevel); PY=${PYTHON:-/work/main/.venv/bin/python}
for m in stochastic gpu-compatible amp; do
  T=/tmp/hunt37idem/$(basename "$CASE").$m; rm -rf "$T"; mkdir -p "$(dirname "$T")"; cp -r "$CASE" "$T"
  (cd "$T" && PYTHONPATH=$ROOT "$PY" -m bf16_migrate migrate . --mode $m "$@" >/dev/null 2>&1)
  out=$(cd "$T" && PYTHONPATH=$ROOT "$PY" -m bf16_migrate . --mode $m --diff "$@" 2>/tmp/hunt37idem/err.txt)
  echo "== $(basename "$CASE") $m second run: $(echo -n "$out" | wc -l) diff lines; $(grep -o "bf16-migrate: .*" /tmp/hunt37idem/err.txt | tail -1)"
  [ -n "$out" ] && echo "$out" | head -20
done
