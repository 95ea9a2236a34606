#!/bin/bash
# usage: hunt42/after57/vreg57.sh: verify (XLA CPU device, under the lock) after57/regress/amp_probe_scatter in amp,
# --steps 4 -> after57/regress.amp_probe_scatter.amp.verify.txt
A=$(cd "$(dirname "$0")" && pwd); ROOT=$(git -C "$A" rev-parse --show-toplevel); T=/tmp/rejudge57/v/reg.amp_probe_scatter.amp
[ -n "$A" ] && [ -n "$ROOT" ] || exit 1
O=$A/regress.amp_probe_scatter.amp.verify.txt; rm -rf "$T"; mkdir -p "$T"; cp -r "$A/regress/amp_probe_scatter"/. "$T"/
(cd "$T" && git init -q && git add -A && git -c user.email=r@x -c user.name=r commit -qm legacy \
 && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$ROOT timeout 900 /work/main/.venv/bin/python -m bf16_migrate verify repro.py --mode amp --steps 4 > "$O" 2>&1; echo "exit $?" >> "$O")
echo "$(date +%T) amp_probe_scatter amp: $(grep VERDICT "$O") $(tail -1 "$O")"
