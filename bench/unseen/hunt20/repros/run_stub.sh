#!/bin/bash
# usage: repros/run_stub.sh LABEL CASE_DIR ENTRY [migrate options] -- [script args]
# Copies CASE_DIR to /tmp/h20run/LABEL.MODE, migrates the copy in place (bf16-migrate migrate, each mode),
# then runs ENTRY (a .py, or a .ipynb flattened by nb2py.py) with plain CPU torch and the stub torch_xla.
# Output -> verify_logs/LABEL.MODE.stub.txt. No XLA device is used.
LABEL=$1; CASE=$2; ENTRY=$3; shift 3
MIG=(); while [ $# -gt 0 ] && [ "$1" != "--" ]; do MIG+=("$1"); shift; done; [ "$1" = "--" ] && shift
R=$(cd "$(dirname "$0")" && pwd); H=$(dirname "$R"); ROOT=$(git -C "$H" rev-parse --show-toplevel)
PY=${PYTHON:-/work/main/.venv/bin/python}
for m in stochastic gpu-compatible amp; do
  T=/tmp/h20run/$LABEL.$m; rm -rf "$T"; mkdir -p "$(dirname "$T")"; cp -r "$CASE" "$T"
  O=$H/verify_logs/$LABEL.$m.stub.txt
  {
    echo "== migrate $m ${MIG[*]}"
    (cd "$T" && PYTHONPATH=$ROOT "$PY" -m bf16_migrate migrate . --mode $m "${MIG[@]}" 2>&1 | tail -3)
    E=$T/$ENTRY
    if [[ $ENTRY == *.ipynb ]]; then "$PY" "$R/nb2py.py" "$E" > "$T/_nb.py"; E=$T/_nb.py; fi
    echo "== run $ENTRY $* (stub torch_xla, CPU)"
    (cd "$T" && PYTHONPATH=$R/stub:$T timeout 300 "$PY" "$E" "$@" 2>&1 | grep -v -i warn | tail -15)
  } > "$O" 2>&1
  echo "== $m"; cat "$O"
done
