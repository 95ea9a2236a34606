#!/bin/bash
# repros/run_verify.sh NAME MODE: verify repros/NAME/repro.py (--steps 3) on a scratch copy, on the XLA CPU device
# under the shared lock -> verify_logs/repro.NAME.MODE.verify.txt
set -u
H=/work/wt/hunt51/bench/unseen/hunt51; N=$1; M=$2; T=/tmp/hunt51/vr/$N.$M
rm -rf "$T"; mkdir -p "$T"; cp -r "$H/repros/$N"/. "$T"/
(cd "$T" && git init -q && git add -A && git -c user.email=h@h -c user.name=h commit -qm legacy)
(cd "$T" && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=/work/wt/hunt51 STEPS=3 timeout 900 \
  /work/main/.venv/bin/python -m bf16_migrate verify repro.py --mode "$M" --steps 3) > "$H/verify_logs/repro.$N.$M.verify.txt" 2>&1
echo "$N $M rc=$?" >> "$H/verify_logs/repro.rc.txt"
