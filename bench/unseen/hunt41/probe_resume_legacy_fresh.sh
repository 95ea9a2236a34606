#!/bin/bash
# device probe (control of probe_resume_legacy.sh): the legacy resume_train started fresh (no checkpoint) on the
# XLA CPU device under XLA_USE_BF16=1 -> verify_logs/probe.resume_legacy_fresh.txt
H=$(cd "$(dirname "$0")" && pwd); PY=${PYTHON:-/work/main/.venv/bin/python}
T=/tmp/hunt41probe_fresh; rm -rf $T; cp -r "$H/cases/resume_train" $T
O=$H/verify_logs/probe.resume_legacy_fresh.txt
(cd $T && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU XLA_USE_BF16=1 timeout 600 "$PY" train_resume.py --ckpt fresh.pt --steps 2 2>&1 | grep -v -i warn | grep -E "resumed|^step|DTYPES|SAVED|Error|File \"$T" | head -20) > "$O"
cat "$O"
