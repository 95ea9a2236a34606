#!/bin/bash
# usage: ./vresume.sh MODE: verify resume_train/train_resume.py resuming from a legacy-format checkpoint (float32 on disk,
# made by the unmigrated case, step 8) placed in the copy as resume.pt; every run resumes from its own copy of it.
# The checkpoint: `STEPS=8 python train_resume.py --ckpt /tmp/h41_legacy_resume.pt` (stub or device, f32 either way).
M=$1; shift
H=$(cd "$(dirname "$0")" && pwd); ROOT=$(git -C "$H" rev-parse --show-toplevel); PY=${PYTHON:-/work/main/.venv/bin/python}
T=/tmp/hunt41v/resume_train.$M; rm -rf "$T"; mkdir -p "$(dirname "$T")"; cp -r "$H/cases/resume_train" "$T"
cp /tmp/h41_legacy_resume.pt "$T/resume.pt"
O=$H/verify_logs/resume_train.$M.verify.txt
(cd "$T" && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$ROOT timeout 1500 "$PY" -m bf16_migrate verify train_resume.py --mode "$M" --steps 3 --legacy-env XLA_USE_BF16=1 "$@" -- --ckpt resume.pt --steps 6 > "$O" 2>&1; echo "exit $?" >> "$O")
tail -25 "$O"
