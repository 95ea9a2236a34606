#!/bin/bash
# usage: e2e.sh CASE MODE "CMD" [files to show]: apply `bf16-migrate CASE --mode MODE` (MODE=legacy: none) to a copy
# of CASE, run CMD there under the XLA lock (PJRT_DEVICE=CPU); output -> verify_logs/CASE.e2e.MODE.txt
C=$1; M=$2; CMD=$3; shift 3
H=$(cd "$(dirname "$0")" && pwd); ROOT=$(git -C "$H" rev-parse --show-toplevel); PY=/work/main/.venv/bin/python
T=$(mktemp -d); cp -r "$H/$C/." $T/
OUT=$H/verify_logs/$C.e2e.$M.txt
{ echo "copy: $T"
  if [ "$M" != legacy ]; then PYTHONPATH=$ROOT $PY -m bf16_migrate $T --mode $M 2>&1 | tail -2; fi
  cd $T && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PATH=/work/main/.venv/bin:$PATH timeout 600 bash -c "$CMD" 2>&1 | grep -v "will be deprecated"; echo "exit ${PIPESTATUS[0]}"
  for f in "$@"; do echo "== $f"; $PY -c "
import sys, numpy as np, json
f = sys.argv[1]
if f.endswith('.npy'):
    a = np.load(f); print(a.dtype, a.shape, a.ravel()[:4].tolist(), float(np.abs(a).mean()))
elif f.endswith('.pt'):
    import torch; s = torch.load(f, map_location='cpu'); s = s.get('model', s)
    print({k: (str(v.dtype), round(float(v.float().abs().mean()), 6)) for k, v in s.items() if hasattr(v, 'dtype')})
else:
    print(open(f).read()[:600])
" $f; done; } > $OUT 2>&1
echo "$C $M: $(grep '^exit' $OUT)"
