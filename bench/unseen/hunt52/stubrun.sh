#!/bin/bash
# usage: ./stubrun.sh LABEL CASE_DIR 'COMMAND' [migrate options]: like repros/run_stub.sh, but COMMAND is any shell
# command run in the migrated copy (python -m pkg, pytest, a launcher), with `python`/`python3` the venv's and the
# stub torch_xla first on PYTHONPATH. "unmigrated" is run first. Output -> verify_logs/LABEL.MODE.stub.txt.
LABEL=$1; CASE=$(cd "$2" && pwd); CMD=$3; shift 3
H=$(cd "$(dirname "$0")" && pwd); ROOT=$(git -C "$H" rev-parse --show-toplevel); PY=${PYTHON:-/work/main/.venv/bin/python}
BIN=/tmp/hunt52bin; mkdir -p $BIN; rm -f $BIN/python $BIN/python3
for b in python python3; do printf '#!/bin/bash\nexec env PYTHONPATH=%s${PYTHONPATH:+:$PYTHONPATH} %s "$@"\n' "$H/repros/stub" "$PY" > $BIN/$b; chmod +x $BIN/$b; done
for m in unmigrated stochastic gpu-compatible amp; do
  T=/tmp/hunt52run/$LABEL.$m; rm -rf "$T"; mkdir -p "$(dirname "$T")"; cp -r "$CASE" "$T"
  O=$H/verify_logs/$LABEL.$m.stub.txt
  {
    if [ $m != unmigrated ]; then echo "== migrate $m $*"; (cd "$T" && PYTHONPATH=$ROOT "$PY" -m bf16_migrate migrate . --mode $m "$@" 2>&1 | tail -2); fi
    echo "== run: $CMD (stub torch_xla, CPU)"
    (cd "$T" && PATH=$BIN:$PATH PYTHONPATH=$H/repros/stub${EXTRA_PP:+:$EXTRA_PP} timeout 300 bash -c "$CMD" 2>&1 | grep -v -i warn | tail -${TAILN:-14})
  } > "$O" 2>&1
  echo "== $m"; cat "$O"
done
