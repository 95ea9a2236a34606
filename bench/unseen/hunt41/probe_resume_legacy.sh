#!/bin/bash
# device probe: the legacy resume_train (XLA_USE_BF16=1) resuming from the legacy-format checkpoint, run directly on
# the XLA CPU device under the lock, to see where the legacy run of verify failed -> verify_logs/probe.resume_legacy.txt
H=$(cd "$(dirname "$0")" && pwd); PY=${PYTHON:-/work/main/.venv/bin/python}
T=/tmp/hunt41probe_resume; rm -rf $T; cp -r "$H/cases/resume_train" $T; cp /tmp/h41_legacy_resume.pt $T/resume.pt
O=$H/verify_logs/probe.resume_legacy.txt
(cd $T && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU XLA_USE_BF16=1 timeout 600 "$PY" train_resume.py --ckpt resume.pt --steps 2 2>&1 | grep -v -i warn | grep -E "resumed|^step|DTYPES|SAVED|Error|File \"$T" | head -20) > "$O"
cat "$O"
