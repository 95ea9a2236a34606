#!/bin/bash
# verify the launcher (legacy copy) in amp mode on the XLA CPU device; then run the migrated script once to print dtypes.
H=/work/wt/hunt51/bench/unseen/hunt51; T=/tmp/hunt51/vr/own_autocast_cuda.amp
rm -rf "$T"; mkdir -p "$T"; cp "$H/repros/own_autocast_cuda"/repro.py "$H/repros/own_autocast_cuda"/run.sh "$T"/
(cd "$T" && git init -q && git add -A && git -c user.email=h@h -c user.name=h commit -qm legacy)
(cd "$T" && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=/work/wt/hunt51 STEPS=3 timeout 900 \
  /work/main/.venv/bin/python -m bf16_migrate verify run.sh --mode amp --steps 3) > "$H/verify_logs/repro.own_autocast_cuda.amp.verify.txt" 2>&1
echo "own_autocast_cuda amp rc=$?" >> "$H/verify_logs/repro.rc.txt"
M=/tmp/hunt51/vr/own_autocast_cuda.amp.migrated; rm -rf "$M"; cp -r "$T" "$M"
(cd "$M" && PYTHONPATH=/work/wt/hunt51 /work/main/.venv/bin/python -m bf16_migrate migrate . --mode amp >/dev/null 2>&1;
 flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU STEPS=2 timeout 300 /work/main/.venv/bin/python repro.py --enable_pt_autocast 2>&1 | grep "^step") \
  > "$H/verify_logs/repro.own_autocast_cuda.amp.run.txt"
