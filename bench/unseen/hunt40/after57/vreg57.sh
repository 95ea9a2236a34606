#!/bin/bash
# usage: hunt40/after57/vreg57.sh: verify on the XLA CPU device (under the lock) the after57 regression repros
# (after57/regress/NAME, stochastic, --steps 3) and the case ewc_multihead stochastic (as vq1.sh ran it at 2d3f9cd)
# -> after57/regress.NAME.stochastic.verify.txt, after57/ewc_multihead.stochastic.verify.txt
A=$(cd "$(dirname "$0")" && pwd); H=$(dirname "$A"); ROOT=$(git -C "$H" rev-parse --show-toplevel); PY=/work/main/.venv/bin/python
[ -n "$A" ] && [ -n "$ROOT" ] || exit 1
v() {  # SRC-DIR LABEL SCRIPT [verify args]
  S=$1; L=$2; E=$3; shift 3; T=/tmp/rejudge57/v/reg.$L; O=$A/$L.stochastic.verify.txt
  rm -rf "$T"; mkdir -p "$T"; cp -r "$S"/. "$T"/
  (cd "$T" && git init -q && git add -A && git -c user.email=r@x -c user.name=r commit -qm legacy \
   && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$ROOT timeout 900 "$PY" -m bf16_migrate verify "$E" --mode stochastic "$@" > "$O" 2>&1; echo "exit $?" >> "$O")
  echo "$(date +%T) $L: $(grep VERDICT "$O") $(tail -1 "$O")"
}
v "$A/regress/head_appended_before_opt" regress.head_appended_before_opt repro.py --steps 3
v "$A/regress/head_setattr_before_opt" regress.head_setattr_before_opt repro.py --steps 3
v "$H/cases/ewc_multihead" ewc_multihead ewc.py --steps 8 --legacy-env XLA_USE_BF16=1 -- --tasks 2 --steps 4
echo DONE
