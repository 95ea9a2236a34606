#!/bin/bash
# usage: hunt41/after57/vcase57.sh: verify (XLA CPU device, under the lock, --steps 8, no --against: the codemod's own
# migration of a fresh copy of the legacy case) the cases whose migration changed since 2d3f9cd
# -> HUNT/after57/CASE.MODE.verify.txt
U=$(cd "$(dirname "$0")/../.." && pwd); ROOT=$(git -C "$U" rev-parse --show-toplevel); PY=/work/main/.venv/bin/python
[ -n "$U" ] && [ -n "$ROOT" ] || exit 1
v() {  # HUNT CASE SCRIPT MODE [verify args]
  H=$1; C=$2; E=$3; M=$4; shift 4; T=/tmp/rejudge57/v/case.$H.$C.$M; O=$U/$H/after57/$C.$M.verify.txt
  [ -n "$H" ] && [ -n "$C" ] || return 1
  rm -rf "$T"; mkdir -p "$T"; cp -r "$U/$H/cases/$C"/. "$T"/
  (cd "$T" && git init -q && git add -A && git -c user.email=r@x -c user.name=r commit -qm legacy \
   && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=$ROOT timeout 1500 "$PY" -m bf16_migrate verify "$E" --mode "$M" --steps 8 "$@" > "$O" 2>&1; echo "exit $?" >> "$O")
  echo "$(date +%T) $H $C $M: $(grep VERDICT "$O") $(tail -1 "$O")"
}
v hunt41 ckpt_average average.py stochastic --legacy-env XLA_USE_BF16=1 -- --ckpt-dir avg --out avg/averaged
v hunt41 lr_finder lr_find.py stochastic --legacy-env XLA_USE_BF16=1 -- --trials 10 --steps 8
v hunt41 tabular_f64 churn.py stochastic --legacy-env XLA_DOWNCAST_BF16=1
echo DONE
