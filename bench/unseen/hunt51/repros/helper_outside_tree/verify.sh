#!/bin/bash
# verify the repro (--mix path) on the XLA CPU device, the helper on PYTHONPATH (outside the copied tree).
H=/work/wt/hunt51/bench/unseen/hunt51; M=${1:-stochastic}; T=/tmp/hunt51/vr/helper_outside_tree.$M
rm -rf "$T"; mkdir -p "$T"; cp "$H/repros/helper_outside_tree/repro.py" "$T/"
(cd "$T" && git init -q && git add -A && git -c user.email=h@h -c user.name=h commit -qm legacy)
(cd "$T" && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=/work/wt/hunt51:$H/repros/helper_outside_tree/helper_dir \
  STEPS=3 timeout 900 /work/main/.venv/bin/python -m bf16_migrate verify repro.py --mode "$M" --steps 3 -- --mix) \
  > "$H/verify_logs/repro.helper_outside_tree.$M.verify.txt" 2>&1
echo "helper_outside_tree $M rc=$?" >> "$H/verify_logs/repro.rc.txt"
