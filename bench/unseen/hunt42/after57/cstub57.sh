#!/bin/bash
# usage: HUNT/after57/cstub57.sh LABEL 'COMMAND': run COMMAND in each mode's migrated copy made by cases57.sh
# (/tmp/rejudge57/c/HUNT/LABEL.MODE) with `python` the venv's and the stub torch_xla first on PYTHONPATH
# -> after57/LABEL.MODE.stub.txt (last lines)
L=$1; CMD=$2; [ -n "$L" ] && [ -n "$CMD" ] || exit 1
A=$(cd "$(dirname "$0")" && pwd); H=$(dirname "$A"); HN=$(basename "$H"); PY=/work/main/.venv/bin/python
BIN=/tmp/rejudge57/bin; mkdir -p $BIN
for b in python python3; do printf '#!/bin/bash\nexec env PYTHONPATH=%s${PYTHONPATH:+:$PYTHONPATH} %s "$@"\n' "$H/repros/stub" "$PY" > $BIN/$b; chmod +x $BIN/$b; done
for m in stochastic gpu-compatible amp; do T=/tmp/rejudge57/c/$HN/$L.$m; [ -d "$T" ] || continue
  (cd "$T" && PATH=$BIN:$PATH PYTHONPATH=$H/repros/stub timeout 300 bash -c "$CMD" 2>&1 | grep -v -i warn | tail -${TAILN:-4}) > "$A/$L.$m.stub.txt" 2>&1
  echo "== $HN $L $m"; cat "$A/$L.$m.stub.txt"; done
