#!/bin/bash
# welford_norm's amp migration (/tmp/hunt47mig/welford_norm.amp, made by rerun.sh) and three variants, 3 steps each on
# the XLA CPU device under the lock -> verify_logs/probe.welford_amp_bisect.txt
H=$(cd "$(dirname "$0")/.." && pwd); PY=${PYTHON:-/work/main/.venv/bin/python}
D=/tmp/hunt47bis; rm -rf $D; mkdir -p $D; B=/tmp/hunt47mig/welford_norm.amp/train_norm.py; cp $B $D/base.py
sed 's/torch.log(torch.tensor(float(WIN)))/math.log(WIN)/; s/^import os$/import math\nimport os/' $B > $D/nolog.py
sed 's|drift = torch.cumsum(x, dim=-1) / WIN|drift = x * 0|' $B > $D/nocumsum.py
sed 's|stats.update(x.transpose(1, 2).reshape(-1, CH)\[::32\])|pass|' $B > $D/noupdate.py
for f in base nolog nocumsum noupdate; do echo "== $f"; (cd $D && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU STEPS=3 timeout 300 "$PY" $f.py 2>&1 | grep -E "^step|Error|error" | cut -c1-200); done > "$H/verify_logs/probe.welford_amp_bisect.txt"
cat "$H/verify_logs/probe.welford_amp_bisect.txt"
